#include <gtest/gtest.h>

#include "sluice/dataset.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

TEST(SourceTest, ImageFolderSortedWithLabels) {
  TempDir dir;
  write_bytes(dir.path() + "/dog/b.JPG", "x");
  write_bytes(dir.path() + "/dog/a.png", "x");
  write_bytes(dir.path() + "/cat/z.jpeg", "x");
  write_bytes(dir.path() + "/cat/notes.txt", "x");
  write_bytes(dir.path() + "/README", "x");
  auto s = list_image_folder(dir.path());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->classes, (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(s->items.size(), 3u);
  EXPECT_EQ(s->items[0].key, "cat/z.jpeg");
  EXPECT_EQ(s->items[0].label, 0);
  EXPECT_EQ(s->items[1].key, "dog/a.png");
  EXPECT_EQ(s->items[2].key, "dog/b.JPG");
  EXPECT_EQ(s->items[2].label, 1);
  EXPECT_EQ(s->ignored.size(), 2u);
}

TEST(SourceTest, ImageFolderErrors) {
  TempDir dir;
  EXPECT_EQ(list_image_folder(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
  auto empty = list_image_folder(dir.path());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("no class folders"), std::string_view::npos);
  write_bytes(dir.path() + "/cat/notes.txt", "x");
  EXPECT_NE(list_image_folder(dir.path()).status().message().find("no .jpg"),
            std::string_view::npos);
  write_bytes(dir.path() + "/cat/a.jpg", "x");
  auto outside = list_image_folder(dir.path(), {"dog"});
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("not in the class list"), std::string_view::npos);
}

TEST(SourceTest, CsvWithHeaderAndNames) {
  TempDir dir;
  write_bytes(dir.path() + "/list.csv",
              "path,label\nimgs/a.jpg,dog\n\"imgs/b c.jpg\",cat\n/abs/c.png , dog\n");
  auto s = read_list_file(dir.path() + "/list.csv");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->classes, (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(s->items.size(), 3u);
  EXPECT_EQ(s->items[0].path, dir.path() + "/imgs/a.jpg");
  EXPECT_EQ(s->items[0].label, 1);
  EXPECT_EQ(s->items[1].key, "imgs/b c.jpg");
  EXPECT_EQ(s->items[2].path, "/abs/c.png");
}

TEST(SourceTest, TsvWithIntegerLabels) {
  TempDir dir;
  write_bytes(dir.path() + "/list.tsv", "a.jpg\t2\nb.jpg\t0\r\n");
  auto s = read_list_file(dir.path() + "/list.tsv");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->classes, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(s->items[0].label, 2);
  EXPECT_EQ(s->items[1].label, 0);
}

TEST(SourceTest, LabelOutsideClassListNamesTheLine) {
  TempDir dir;
  write_bytes(dir.path() + "/list.csv", "a.jpg,cat\nb.jpg,horse\n");
  auto s = read_list_file(dir.path() + "/list.csv", {"cat", "dog"});
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("list.csv: line 2: label 'horse' is outside the class list"),
            std::string_view::npos)
      << s.status().message();
  write_bytes(dir.path() + "/ids.csv", "a.jpg,0\nb.jpg,5\n");
  EXPECT_FALSE(read_list_file(dir.path() + "/ids.csv", {"cat", "dog"}).ok());
}

TEST(SourceTest, MalformedListLines) {
  TempDir dir;
  write_bytes(dir.path() + "/l.csv", "just-a-path\n");
  auto s = read_list_file(dir.path() + "/l.csv");
  EXPECT_NE(s.status().message().find("line 1"), std::string_view::npos);
  write_bytes(dir.path() + "/e.csv", "\n# comment\n");
  EXPECT_EQ(read_list_file(dir.path() + "/e.csv").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(read_list_file(dir.path() + "/none.csv").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice
