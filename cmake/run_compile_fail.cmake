# Compiles SNIPPET with COMPILER (KIND = CXX or CUDA) and passes only when the
# compilation fails with a diagnostic containing the snippet's "// expect: " text.
file(STRINGS ${SNIPPET} expect_lines REGEX "^// expect: ")
list(LENGTH expect_lines count)
if(NOT count EQUAL 1)
    message(FATAL_ERROR "${SNIPPET}: needs exactly one '// expect: <diagnostic text>' line")
endif()
string(REGEX REPLACE "^// expect: " "" expected "${expect_lines}")

string(REPLACE "|" ";" include_list "${INCLUDES}")
set(include_flags)
foreach(dir IN LISTS include_list)
    list(APPEND include_flags -I${dir})
endforeach()
if(KIND STREQUAL "CUDA")
    set(command ${COMPILER} -std=c++20 -arch=sm_90 --expt-relaxed-constexpr --extended-lambda -x cu
                -c ${SNIPPET} -o /dev/null ${include_flags})
else()
    set(command ${COMPILER} -std=c++20 -fsyntax-only ${SNIPPET} ${include_flags})
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(diagnostics "${out}${err}")

if(result EQUAL 0)
    message(FATAL_ERROR "${SNIPPET} compiled, but it must not (expected: ${expected})")
endif()
string(FIND "${diagnostics}" "${expected}" at)
if(at EQUAL -1)
    message(FATAL_ERROR "${SNIPPET} failed to compile, but not with the expected message.\n"
                        "expected: ${expected}\ndiagnostics:\n${diagnostics}")
endif()
message(STATUS "rejected as expected: ${expected}")
