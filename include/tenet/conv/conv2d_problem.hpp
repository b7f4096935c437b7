// One convolution's sizes at run time, as the library engines (oneDNN on the
// host, cuDNN on the device) take them, made from the static geometry.
#pragma once

#include <cstddef>
#include <string>

namespace tenet::conv {

// An NHWC input, a square window, PyTorch's floor output extents.
struct conv2d_problem {
    long batch, height, width, in_channels;
    long out_height, out_width, out_channels;
    long kernel, stride, padding, dilation, groups;
    bool bias, relu;
};

template <class G, std::size_t Groups, std::size_t OutChannels, bool Bias, bool Relu>
constexpr conv2d_problem problem_of()
{
    auto l = [](std::size_t v) { return static_cast<long>(v); };
    return {l(G::batch),    l(G::height), l(G::width),  l(G::channels), l(G::out_height), l(G::out_width),
            l(OutChannels), l(G::kernel), l(G::stride), l(G::padding),  l(G::dilation),   l(Groups),
            Bias,           Relu};
}

// "(input 2x8x8x4, output ..., kernel 3, ...)": the problem in an error message.
inline std::string describe(const conv2d_problem& p)
{
    auto s = [](long v) { return std::to_string(v); };
    return "(input " + s(p.batch) + "x" + s(p.height) + "x" + s(p.width) + "x" + s(p.in_channels) + ", output " +
           s(p.out_height) + "x" + s(p.out_width) + "x" + s(p.out_channels) + ", kernel " + s(p.kernel) + ", stride " +
           s(p.stride) + ", padding " + s(p.padding) + ", dilation " + s(p.dilation) + ", groups " + s(p.groups) + ")";
}

}  // namespace tenet::conv
