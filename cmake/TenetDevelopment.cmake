# Settings for tenet's own tests, examples and benchmarks (never for users).

# tenet_dev: warnings as errors, sanitizers when asked, and the source
# language switched to CUDA when the CUDA build is on, so that every test and
# example is compiled by nvcc for sm_80 and sm_90 there.
add_library(tenet_dev INTERFACE)
target_link_libraries(tenet_dev INTERFACE tenet::tenet)
target_compile_options(tenet_dev INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
# g++ 12 at -O3 reports overlapping memcpy inside libstdc++'s "text" + string
# (a false positive, GCC bug 105329); later versions do not.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(tenet_dev INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>
                                               $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-restrict>)
endif()
if(TENET_SANITIZE)
    target_compile_options(tenet_dev INTERFACE -fsanitize=${TENET_SANITIZE} -fno-sanitize-recover=all
                                               -fno-omit-frame-pointer)
    target_link_options(tenet_dev INTERFACE -fsanitize=${TENET_SANITIZE})
endif()

# tenet_dev_sources(target): compile the target's .cpp sources as CUDA in the
# CUDA build (tenet::tenet links the CUDA runtime in either build).
function(tenet_dev_sources target)
    target_link_libraries(${target} PRIVATE tenet_dev)
    if(TENET_CUDA_ENABLED)
        get_target_property(sources ${target} SOURCES)
        set_source_files_properties(${sources} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE CUDA)
    endif()
endfunction()

# The device bundle's manifest (CUDA builds): cmake/TenetDeviceBundle.cmake.
if(TENET_CUDA_ENABLED)
    include(${CMAKE_CURRENT_LIST_DIR}/TenetDeviceBundle.cmake)
endif()
