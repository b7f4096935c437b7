# Fails unless the host-only program HOST has no NEEDED entry for cuBLASLt,
# cuDNN or NCCL while the CUDA program DEVICE (whose GEMMs call cuBLASLt)
# has one for cuBLASLt: tenet links them --as-needed.
# Run: cmake -DREADELF=<readelf> -DHOST=<program> -DDEVICE=<program> -P check_needed.cmake
function(needed_of program out)
    execute_process(COMMAND ${READELF} -d ${program} RESULT_VARIABLE result OUTPUT_VARIABLE listing ERROR_VARIABLE err)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "${READELF} -d ${program} failed: ${err}")
    endif()
    string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]*\\]" entries "${listing}")
    set(${out} "${entries}" PARENT_SCOPE)
endfunction()

needed_of(${HOST} host_needed)
if(host_needed MATCHES "libcublasLt|libcudnn|libnccl")
    message(FATAL_ERROR "the host-only program ${HOST} depends on a CUDA library it does not use:\n${host_needed}")
endif()
needed_of(${DEVICE} device_needed)
if(NOT device_needed MATCHES "libcublasLt")
    message(FATAL_ERROR "the CUDA program ${DEVICE} calls cuBLASLt but does not depend on it:\n${device_needed}")
endif()
message(STATUS "NEEDED: the host-only program has no cuBLASLt, cuDNN or NCCL; the CUDA program has cuBLASLt")
