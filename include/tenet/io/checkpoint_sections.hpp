// Checkpoint sections from and into memory of any place, and the checks a
// loader makes on them before it changes anything: what nn::model,
// train::optimizer and train::trainer build their files from.
//
//   contents.sections.push_back(io::section_of<Device>("parameters", params, n, stream));
//   const auto& s = io::find_section(path, contents, "parameters", n * sizeof(T));
//   io::check_finite<T>(path, s);                // every value finite, or format_error
//   io::upload<Device>(params, s, stream);       // only once every section passed
#pragma once

#include "../memory/copy_bytes.hpp"
#include "../numeric/convert.hpp"
#include "checkpoint_file.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace tenet::io {

// count elements of memory in Place as a section (waits for the stream).
template <class Place, class T>
checkpoint_section section_of(std::string name, const T* data, std::size_t count, stream_ref stream)
{
    std::vector<std::byte> bytes(count * sizeof(T));
    copy_bytes<Host, Place>(bytes.data(), data, bytes.size(), stream);
    stream.synchronize();
    return {std::move(name), std::move(bytes)};
}

// A host object's bytes as a section.
template <class T>
checkpoint_section section_of_value(std::string name, const T& value)
{
    std::vector<std::byte> bytes(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
    return {std::move(name), std::move(bytes)};
}

// A section's bytes into memory of Place (waits: the section is the caller's).
template <class Place, class T>
void upload(T* to, const checkpoint_section& from, stream_ref stream)
{
    copy_bytes<Place, Host>(to, from.bytes.data(), from.bytes.size(), stream);
    stream.synchronize();
}

// format_error unless every element of the section (of type T) is finite:
// inf or NaN in weights or optimizer state only comes from corruption or a
// diverged run, and the next step would spread it.
template <class T>
void check_finite(const std::string& path, const checkpoint_section& section)
{
    for (std::size_t i = 0; i < section.bytes.size() / sizeof(T); ++i) {
        T v;
        std::memcpy(&v, section.bytes.data() + i * sizeof(T), sizeof v);
        if (!std::isfinite(static_cast<double>(convert<f64>(v))))
            throw format_error(path, "section " + section.name + " holds inf/NaN at element " + std::to_string(i));
    }
}

}  // namespace tenet::io
