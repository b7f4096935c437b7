# Configures tenet as the top-level project with no build type (it must pick
# Release, and say so) and as a parent's subdirectory (the parent's empty
# choice must stay empty), each in its own folder under WORK.
# Run: cmake -DSOURCE=<tenet> -DAPP=<consumer app> -DWORK=<folder> -DGENERATOR=<g> -DCXX=<g++> -P check_build_type.cmake
function(configure name source)
    set(dir ${WORK}/${name})
    file(REMOVE_RECURSE ${dir})
    execute_process(
        COMMAND ${CMAKE_COMMAND} -S ${source} -B ${dir} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DTENET_CUDA=OFF
                -DTENET_BUILD_TESTS=OFF -DTENET_BUILD_EXAMPLES=OFF ${ARGN}
        RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "configuring ${source} failed:\n${out}\n${err}")
    endif()
    file(STRINGS ${dir}/CMakeCache.txt line REGEX "^CMAKE_BUILD_TYPE:")
    set(build_type "${line}" PARENT_SCOPE)
    set(output "${out}" PARENT_SCOPE)
endfunction()

configure(top_level ${SOURCE})
if(NOT build_type STREQUAL "CMAKE_BUILD_TYPE:STRING=Release")
    message(FATAL_ERROR "tenet as the top-level project with no build type: want Release, got '${build_type}'")
endif()
if(NOT output MATCHES "tenet: no CMAKE_BUILD_TYPE given: building Release")
    message(FATAL_ERROR "tenet chose Release without saying so:\n${output}")
endif()

configure(subdirectory ${APP} -DTENET_SOURCE_DIR=${SOURCE})
if(NOT build_type MATCHES "^CMAKE_BUILD_TYPE:STRING=$")
    message(FATAL_ERROR "tenet as a subdirectory changed its parent's build type: '${build_type}'")
endif()
message(STATUS "top level: Release; as a subdirectory: the parent's (empty) build type")
