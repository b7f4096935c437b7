# The scanner's own test (api.scanner): on tests/api/fixture it lists exactly
# fixture/expected_names.txt, and against fixture/API.md, which leaves one
# name out, it fails naming that name and no other.
#   cmake -DSCANNER=path/to/tenet_public_names -DFIXTURE=tests/api/fixture -P check_scanner.cmake
execute_process(COMMAND ${SCANNER} ${FIXTURE} OUTPUT_VARIABLE listed RESULT_VARIABLE listed_rc)
file(READ ${FIXTURE}/expected_names.txt expected)
if(NOT listed_rc EQUAL 0 OR NOT listed STREQUAL expected)
    message(FATAL_ERROR "tenet: the scanner listed (exit ${listed_rc}):\n${listed}\nexpected:\n${expected}")
endif()
execute_process(COMMAND ${SCANNER} ${FIXTURE} ${FIXTURE}/API.md ERROR_VARIABLE missing RESULT_VARIABLE check_rc)
if(NOT check_rc EQUAL 1 OR NOT missing MATCHES "^tenet: [^\n]*API.md does not document some_variable \\(tenet/sub/sample.hpp\\)\n$")
    message(FATAL_ERROR "tenet: the planted gap was not reported alone (exit ${check_rc}):\n${missing}")
endif()
message(STATUS "the scanner lists the fixture's names and reports its one undocumented name")
