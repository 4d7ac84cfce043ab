#include "base/file_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

namespace sluice::detail {

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

Result<File> File::open_read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(path, "cannot open", errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return invalid_argument_error(path + ": is a folder, expected a file");
  }
  return File(fd, path);
}

Result<File> File::create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(path, "cannot create", errno);
  return File(fd, path);
}

Result<File> File::append(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(path, "cannot open for appending", errno);
  return File(fd, path);
}

Result<uint64_t> File::size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return errno_error(path_, "stat", errno);
  return static_cast<uint64_t>(st.st_size);
}

Result<size_t> File::pread(uint64_t offset, void* buf, size_t n) const {
  size_t done = 0;
  auto* p = static_cast<char*>(buf);
  while (done < n) {
    ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error(path_, "read at offset " + std::to_string(offset + done), errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Result<size_t> File::read(void* buf, size_t n) {
  size_t done = 0;
  auto* p = static_cast<char*>(buf);
  while (done < n) {
    ssize_t r = ::read(fd_, p + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error(path_, "read", errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status File::write_all(const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = ::write(fd_, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error(path_, "write", errno);
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status();
}

Status File::sync() {
  if (::fsync(fd_) != 0) return errno_error(path_, "fsync", errno);
  return Status();
}

Status File::close() {
  if (fd_ < 0) return Status();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return errno_error(path_, "close", errno);
  return Status();
}

Result<std::string> read_file(const std::string& path, uint64_t max_bytes) {
  SLUICE_ASSIGN_OR_RETURN(File f, File::open_read(path));
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, f.size());
  if (size > max_bytes) {
    return resource_exhausted_error(path + ": file is " + std::to_string(size) +
                                    " bytes, over the limit of " + std::to_string(max_bytes));
  }
  std::string data(size, '\0');
  SLUICE_ASSIGN_OR_RETURN(size_t n, f.pread(0, data.data(), size));
  data.resize(n);
  return data;
}

std::string temp_name_for(const std::string& path) {
  return path + ".tmp-" + std::to_string(::getpid());
}

bool temp_writer_alive(std::string_view digits) {
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return true;
  }
  const pid_t pid = static_cast<pid_t>(std::stoi(std::string(digits)));
  return pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
}

int remove_dead_temporaries_of(const std::string& path) {
  const std::filesystem::path p(path);
  std::filesystem::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  const std::string prefix = p.filename().string() + ".tmp-";
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    if (temp_writer_alive(std::string_view(name).substr(prefix.size()))) continue;
    if (std::filesystem::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

Status sync_parent_dir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error(parent.string(), "open folder", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return errno_error(parent.string(), "fsync folder", err);
  return Status();
}

Status write_file_atomic(const std::string& path, std::string_view data) {
  std::string tmp = temp_name_for(path);
  {
    SLUICE_ASSIGN_OR_RETURN(File f, File::create(tmp));
    Status s = f.write_all(data.data(), data.size());
    if (s.ok()) s = f.sync();
    if (s.ok()) s = f.close();
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return errno_error(path, "rename into place", err);
  }
  return sync_parent_dir(path);
}

}  // namespace sluice::detail
