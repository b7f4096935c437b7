// profile::scoped_range: an NVTX range in the "tenet" domain for as long as
// the object lives, so Nsight Systems shows forward, backward, the optimizer
// step and data loading on the timeline.
//
//   { profile::scoped_range r("forward"); net.forward(x); }
//
// NVTX3 is header-only; with no tool attached each call is a test and a
// return. Defining TENET_NO_NVTX removes the calls altogether.
#pragma once

#include "../config.hpp"

#ifndef TENET_NO_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace tenet::profile {

#ifndef TENET_NO_NVTX

// Created once, on first use, and shared by every range.
inline nvtxDomainHandle_t tenet_domain()
{
    static const nvtxDomainHandle_t domain = nvtxDomainCreateA("tenet");
    return domain;
}

class scoped_range {
public:
    // NVTX reads name during the constructor only.
    explicit scoped_range(const char* name)
    {
        nvtxEventAttributes_t attributes{};
        attributes.version = NVTX_VERSION;
        attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
        attributes.message.ascii = name;
        nvtxDomainRangePushEx(tenet_domain(), &attributes);
    }
    ~scoped_range() { nvtxDomainRangePop(tenet_domain()); }
    scoped_range(const scoped_range&) = delete;
    scoped_range& operator=(const scoped_range&) = delete;
};

#else

class scoped_range {
public:
    explicit scoped_range(const char*) {}
    scoped_range(const scoped_range&) = delete;
    scoped_range& operator=(const scoped_range&) = delete;
};

#endif

}  // namespace tenet::profile
