# Test harnesses: compile-fail snippets and PTX inspection.

set(TENET_CUDA_INCLUDE_DIRS ${CUDAToolkit_INCLUDE_DIRS})

# tenet_add_compile_fail_tests(<dir> <label-suffix> <compiler-kind>)
# Every .cpp in <dir> must fail to compile, with a diagnostic containing the
# text of its "// expect: " line. <compiler-kind> is CXX or CUDA.
function(tenet_add_compile_fail_tests dir kind)
    file(GLOB snippets CONFIGURE_DEPENDS ${dir}/*.cpp)
    if(kind STREQUAL "CUDA")
        set(compiler ${CMAKE_CUDA_COMPILER})
    else()
        set(compiler ${CMAKE_CXX_COMPILER})
    endif()
    string(TOLOWER ${kind} suffix)
    foreach(snippet IN LISTS snippets)
        file(STRINGS ${snippet} only_for REGEX "^// compilers: ")
        if(only_for AND NOT only_for MATCHES "${suffix}")
            continue()
        endif()
        get_filename_component(name ${snippet} NAME_WE)
        add_test(NAME compile_fail.${suffix}.${name}
            COMMAND ${CMAKE_COMMAND}
                -DCOMPILER=${compiler} -DKIND=${kind} -DSNIPPET=${snippet}
                -DINCLUDES=${PROJECT_SOURCE_DIR}/include|${CMAKE_CURRENT_SOURCE_DIR}/support|${PROJECT_SOURCE_DIR}/bench|${TENET_CUDA_INCLUDE_DIRS}
                -P ${PROJECT_SOURCE_DIR}/cmake/run_compile_fail.cmake)
        set_tests_properties(compile_fail.${suffix}.${name} PROPERTIES LABELS compile-fail)
    endforeach()
endfunction()

# tenet_add_ptx_test(<name> <source.cu> [<extra expectation>])
# Compiles <source.cu> to PTX for sm_90, assembles it with ptxas -v, and checks
# the kernels against the source's "// PTX-CHECK:" lines and the optional extra
# expectation (see tests/ptx/ptx_check.cpp for the syntax).
function(tenet_add_ptx_test name source)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/ptx)
    add_test(NAME ptx.${name}
        COMMAND ${CMAKE_COMMAND}
            -DNVCC=${CMAKE_CUDA_COMPILER} -DPTXAS=${CUDAToolkit_BIN_DIR}/ptxas
            -DCHECKER=$<TARGET_FILE:tenet_ptx_check> -DSOURCE=${source} -DOUT=${out}/${name}
            -DINCLUDES=${PROJECT_SOURCE_DIR}/include|${CMAKE_CURRENT_SOURCE_DIR}/support|${PROJECT_SOURCE_DIR}/bench
            "-DEXPECT=${ARGN}"
            -P ${PROJECT_SOURCE_DIR}/cmake/run_ptx_check.cmake)
    set_tests_properties(ptx.${name} PROPERTIES LABELS ptx)
endfunction()
