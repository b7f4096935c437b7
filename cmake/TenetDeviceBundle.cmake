# The device bundle's manifest (scripts/gpu_check.sh --bundle): every GPU
# test group and device benchmark registers one row per run here, and the
# table is written to <build>/device_bundle/manifest.tsv when configuration
# ends. scripts/device_bundle/run.sh reads it on the GPU machine.
#
# Columns, tab-separated: kind, name, binary, expected seconds on an H100,
# the arguments of a --quick run ("-": not run then), the arguments of a full
# run. Arguments are separated by "|" (doctest filters hold spaces).
# kind: test, memcheck or racecheck (compute-sanitizer over the arguments'
# cases), bench.

set(TENET_DEVICE_BUNDLE_MANIFEST ${PROJECT_BINARY_DIR}/device_bundle/manifest.tsv)

# tenet_device_bundle_row(<kind> <name> <target> <seconds> <quick args> <full args>)
function(tenet_device_bundle_row kind name target seconds quick full)
    set_property(GLOBAL APPEND PROPERTY TENET_DEVICE_BUNDLE_ROWS
        "${kind}\t${name}\t$<TARGET_FILE_NAME:${target}>\t${seconds}\t${quick}\t${full}")
    tenet_device_bundle_file(${target})
endfunction()

# tenet_device_bundle_file(<target>): a program the bundle carries (every
# row's binary, and the device probe run.sh asks about the machine).
function(tenet_device_bundle_file target)
    set_property(GLOBAL APPEND PROPERTY TENET_DEVICE_BUNDLE_TARGETS ${target})
endfunction()

function(tenet_write_device_bundle_manifest)
    get_property(rows GLOBAL PROPERTY TENET_DEVICE_BUNDLE_ROWS)
    get_property(targets GLOBAL PROPERTY TENET_DEVICE_BUNDLE_TARGETS)
    list(REMOVE_DUPLICATES targets)
    string(JOIN "\n" table "kind\tname\tbinary\tseconds\tquick\targs" ${rows})
    file(GENERATE OUTPUT ${TENET_DEVICE_BUNDLE_MANIFEST} CONTENT "${table}\n")
    # What a bundle builds and carries: target names, then their files.
    list(JOIN targets "\n" names)
    file(WRITE ${PROJECT_BINARY_DIR}/device_bundle/targets.txt "${names}\n")
    list(TRANSFORM targets REPLACE "(.+)" "$<TARGET_FILE:\\1>" OUTPUT_VARIABLE files)
    list(JOIN files "\n" file_lines)
    file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/device_bundle/files.txt CONTENT "${file_lines}\n")
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL tenet_write_device_bundle_manifest)
