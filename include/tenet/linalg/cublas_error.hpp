// cublas_error: a cuBLASLt call returned an error status. Declared for every
// compiler (code that catches it need not be CUDA code); thrown only by the
// device GEMM.
#pragma once

#include "../memory/error.hpp"

#include <string>
#include <utility>

namespace tenet {

class cublas_error : public error {
public:
    cublas_error(int status, std::string call, const std::string& status_name)
        : error("tenet: cuBLASLt call " + call + " failed: " + status_name + " (status " + std::to_string(status) + ")"),
          status_(status), call_(std::move(call))
    {
    }

    int status() const noexcept { return status_; }
    const std::string& call() const noexcept { return call_; }

private:
    int status_;
    std::string call_;
};

}  // namespace tenet
