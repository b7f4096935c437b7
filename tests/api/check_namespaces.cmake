# The namespace check must find each kind of break in a fixture tree, and
# only those: run cmake/check_namespaces.cmake on tests/api/namespaces_fixture.
# Run: cmake -DCHECK=<cmake/check_namespaces.cmake> -DFIXTURE=<fixture dir> -P check_namespaces.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${FIXTURE} -P ${CHECK}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(status EQUAL 0)
    message(FATAL_ERROR "tenet: the namespace check passed a fixture that breaks every rule:\n${out}")
endif()
string(REGEX REPLACE "[ \n]+" " " out "${out}")  # CMake wraps long messages
set(expected
    "tenet/low/low.hpp reaches into high/'s tenet::detail::high"
    "tenet/low/low.hpp names internal::from_high, exported by high/, which is not below low/"
    "tenet::detail::low is declared by several folders: low;mid"
    "tenet/high/high.hpp declares names in the shared tenet::detail"
    "tenet/high/high.hpp reaches into low/'s tenet::nn::detail"
    "tenet/high/high.hpp names internal::nobody, which no folder exports"
    "tenet/high/high.hpp opens the shared tenet::detail with a using-directive"
    "tenet/high/high.hpp opens the shared tenet::detail with using namespace detail")
foreach(line IN LISTS expected)
    string(FIND "${out}" "${line}" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "tenet: the namespace check did not report \"${line}\":\n${out}")
    endif()
endforeach()
foreach(unexpected "internal::helper" "in_a_comment")
    string(FIND "${out}" "${unexpected}" at)
    if(NOT at EQUAL -1)
        message(FATAL_ERROR "tenet: the namespace check reported a legal use (${unexpected}):\n${out}")
    endif()
endforeach()
