#include "base/file_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/temp_dir.h"

namespace sluice::detail {
namespace {

TEST(FileUtilTest, AtomicWriteLeavesNoTemporary) {
  TempDir dir;
  std::string path = dir.path() + "/x.json";
  ASSERT_TRUE(write_file_atomic(path, "hello").ok());
  auto data = read_file(path);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, "hello");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

// A killed writer's "last.pt.tmp-PID" goes; a live writer's (ours, or
// PID 1's) and other files stay.
TEST(FileUtilTest, RemovesOnlyDeadWritersTemporaries) {
  TempDir dir;
  const std::string path = dir.path() + "/last.pt";
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  for (const std::string& name :
       {std::string("last.pt"), "last.pt.tmp-" + std::to_string(dead),
        "last.pt.tmp-" + std::to_string(::getpid()), std::string("last.pt.tmp-1"),
        std::string("last.pt.tmp-x"), std::string("other.tmp-99")}) {
    ASSERT_TRUE(write_file_atomic(dir.path() + "/" + name, "x").ok());
  }
  EXPECT_EQ(remove_dead_temporaries_of(path), 1);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp-" + std::to_string(dead)));
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 5);
}

TEST(FileUtilTest, ReadMissingFileIsNotFound) {
  auto r = read_file("/nonexistent/sluice/file");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/sluice/file"), std::string_view::npos);
}

TEST(FileUtilTest, ReadFolderIsInvalidArgument) {
  TempDir dir;
  auto r = read_file(dir.path());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(FileUtilTest, SizeLimitRefusesBeforeReading) {
  TempDir dir;
  std::string path = dir.path() + "/big";
  ASSERT_TRUE(write_file_atomic(path, std::string(100, 'x')).ok());
  EXPECT_EQ(read_file(path, 99).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(read_file(path, 100).ok());
}

TEST(FileUtilTest, PreadShortAtEnd) {
  TempDir dir;
  std::string path = dir.path() + "/f";
  ASSERT_TRUE(write_file_atomic(path, "abcdef").ok());
  auto f = File::open_read(path);
  ASSERT_TRUE(f.ok());
  char buf[8];
  auto n = f->pread(4, buf, 8);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(std::string(buf, 2), "ef");
}

TEST(FileUtilTest, AppendWritesAfterWhatIsThere) {
  TempDir dir;
  std::string path = dir.path() + "/a";
  for (const char* part : {"abc", "def"}) {
    auto f = File::append(path);  // creates the file the first time
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    ASSERT_TRUE(f->write_all(part, 3).ok());
    ASSERT_TRUE(f->close().ok());
  }
  EXPECT_EQ(*read_file(path), "abcdef");
  auto missing = File::append(dir.path() + "/no/such/folder");
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace sluice::detail
