// The option every device benchmark takes: --quick measures its headline
// rows alone (the device bundle's short run, scripts/device_bundle/run.sh).
#pragma once

#include <string>

namespace bench {

inline bool quick_run(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--quick") return true;
    return false;
}

}  // namespace bench
