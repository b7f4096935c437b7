// Replacing a file atomically, the one way every tenet writer saves: the
// bytes go to a temporary file created exclusively next to the destination
// (O_CREAT | O_EXCL | O_NOFOLLOW: a link planted at its name is never
// followed), which is synced and renamed over the destination, and the
// directory is synced. A reader sees the old file or the new one, never a
// mixture. Temporaries are named "<path>.tmp.<pid>.<random>"; the ones a
// killed writer left (its pid gone) are removed by the next save.
#pragma once

#include "../memory/error.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <string_view>

namespace tenet::io {

namespace detail {

inline std::string system_message(int code) { return std::strerror(code); }

inline std::string directory_of(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

inline std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }  // npos + 1 == 0

// The pid in a temporary's name "<base>.tmp.<pid>.<random>", 0 if it is not one.
inline pid_t temp_owner(std::string_view name, std::string_view base)
{
    const std::string prefix = std::string(base) + ".tmp.";
    if (!name.starts_with(prefix)) return 0;
    name.remove_prefix(prefix.size());
    long long pid = 0;
    std::size_t digits = 0;
    while (digits < name.size() && digits < 10 && name[digits] >= '0' && name[digits] <= '9')
        pid = pid * 10 + (name[digits++] - '0');
    if (digits == 0 || digits == name.size() || name[digits] != '.' || pid <= 0 || pid > 0x7fffffff) return 0;
    return static_cast<pid_t>(pid);
}

// Removes the temporaries of path whose writer no longer exists. Best effort:
// a listing or removal that fails leaves the entry for a later save.
inline void remove_stale_temps(const std::string& path)
{
    const std::string base = name_of(path);
    DIR* listing = ::opendir(directory_of(path).c_str());
    if (!listing) return;
    while (const dirent* entry = ::readdir(listing)) {
        const pid_t owner = temp_owner(entry->d_name, base);
        if (owner != 0 && ::kill(owner, 0) != 0 && errno == ESRCH)
            ::unlinkat(::dirfd(listing), entry->d_name, 0);  // a link is removed, never its target
    }
    ::closedir(listing);
}

}  // namespace detail

// The temporary file of one save; removed unless commit() put it in place.
class atomic_file {
public:
    explicit atomic_file(std::string path) : path_(std::move(path))
    {
        detail::remove_stale_temps(path_);
        std::random_device entropy;
        for (int attempt = 0; fd_ < 0; ++attempt) {
            char suffix[20];
            std::snprintf(suffix, sizeof suffix, ".%08x", static_cast<unsigned>(entropy()));
            temp_ = path_ + ".tmp." + std::to_string(::getpid()) + suffix;
            // 0666 less the umask, as any newly created file.
            fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
            if (fd_ < 0 && (errno != EEXIST || attempt == 16)) fail("cannot create");
        }
    }
    atomic_file(const atomic_file&) = delete;
    atomic_file& operator=(const atomic_file&) = delete;
    ~atomic_file()
    {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_) ::unlink(temp_.c_str());
    }

    const std::string& temp_path() const noexcept { return temp_; }

    void write(const std::byte* data, std::size_t bytes)
    {
        while (bytes != 0) {
            const ssize_t done = ::write(fd_, data, bytes);
            if (done < 0 && errno == EINTR) continue;
            if (done <= 0) fail("cannot write");
            data += done;
            bytes -= static_cast<std::size_t>(done);
        }
    }

    // Makes the bytes durable, renames them over the destination, then makes
    // the rename durable.
    void commit()
    {
        if (::fsync(fd_) != 0) fail("cannot flush");
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0) fail("cannot close");
        if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename", " over it");
        committed_ = true;
        const int dir = ::open(detail::directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        const bool synced = dir >= 0 && ::fsync(dir) == 0;
        const int code = errno;
        if (dir >= 0) ::close(dir);
        if (!synced) throw io_error(path_, "renamed into place but cannot sync its directory: " + detail::system_message(code));
    }

private:
    // Reads errno before anything else can change it.
    [[noreturn]] void fail(const char* verb, const char* tail = "") const
    {
        const std::string reason = detail::system_message(errno);
        throw io_error(path_, std::string(verb) + " " + temp_ + tail + ": " + reason);
    }

    std::string path_;
    std::string temp_;
    int fd_ = -1;
    bool committed_ = false;
};

}  // namespace tenet::io
