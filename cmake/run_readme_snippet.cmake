# Extracts the README's first ```cpp block and compiles it with nvcc, so the
# quickstart that users copy stays true.
file(READ ${README} text)
string(FIND "${text}" "```cpp\n" begin)
if(begin EQUAL -1)
    message(FATAL_ERROR "${README} has no ```cpp block")
endif()
math(EXPR begin "${begin} + 7")
string(SUBSTRING "${text}" ${begin} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} snippet)
file(WRITE ${OUT} "${snippet}")
execute_process(
    COMMAND ${NVCC} -std=c++20 -arch=sm_90 --expt-relaxed-constexpr --extended-lambda -x cu -I${INCLUDES}
            -c ${OUT} -o ${OUT}.o
    RESULT_VARIABLE result ERROR_VARIABLE err)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "the README's quickstart does not compile:\n${err}")
endif()
