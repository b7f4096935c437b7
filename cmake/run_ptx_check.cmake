# SOURCE -> PTX (nvcc -ptx, sm_90) -> ptxas -v, then the checker reads the PTX,
# the ptxas report and the source's PTX-CHECK lines, plus EXPECT if given.
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
string(REPLACE "|" ";" include_list "${INCLUDES}")
set(include_flags)
foreach(dir IN LISTS include_list)
    list(APPEND include_flags -I${dir})
endforeach()
execute_process(
    COMMAND ${NVCC} -ptx -arch=sm_90 -std=c++20 -O3 --expt-relaxed-constexpr --extended-lambda
            ${include_flags} ${SOURCE} -o ${OUT}.ptx
    RESULT_VARIABLE result ERROR_VARIABLE err)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "nvcc -ptx failed on ${SOURCE}:\n${err}")
endif()
execute_process(
    COMMAND ${PTXAS} -arch=sm_90 -v ${OUT}.ptx -o ${OUT}.cubin
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "ptxas failed on ${OUT}.ptx:\n${err}")
endif()
file(WRITE ${OUT}.ptxas.txt "${out}${err}")
set(extra)
if(EXPECT)
    set(extra --expect "${EXPECT}")
endif()
execute_process(
    COMMAND ${CHECKER} --source ${SOURCE} --ptx ${OUT}.ptx --ptxas-log ${OUT}.ptxas.txt ${extra}
    RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "PTX check failed for ${SOURCE}")
endif()
