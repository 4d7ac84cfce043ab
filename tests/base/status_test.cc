#include "sluice/status.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(StatusTest, OkIsDefaultAndHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = data_loss_error("a.tfrecord: offset 16: data CRC mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.to_string(), "DATA_LOSS: a.tfrecord: offset 16: data CRC mismatch");
}

TEST(StatusTest, WithPrefixKeepsCode) {
  Status s = not_found_error("no such key").with_prefix("shard-0");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "shard-0: no such key");
  EXPECT_TRUE(Status().with_prefix("x").ok());
}

TEST(StatusTest, CopyIsDeep) {
  Status a = internal_error("x");
  Status b = a;
  a = Status();
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.message(), "x");
  EXPECT_EQ(b, internal_error("x"));
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(errno_error("f", "open", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(errno_error("f", "open", EACCES).code(), StatusCode::kPermissionDenied);
  EXPECT_NE(errno_error("f", "open", ENOENT).message().find("f: open: "), std::string_view::npos);
}

Result<int> half(int x) {
  if (x % 2) return invalid_argument_error("odd");
  return x / 2;
}

Status quarter(int x, int* out) {
  SLUICE_ASSIGN_OR_RETURN(int h, half(x));
  SLUICE_ASSIGN_OR_RETURN(*out, half(h));
  return Status();
}

TEST(ResultTest, ValueOrStatus) {
  EXPECT_EQ(*half(4), 2);
  EXPECT_EQ(half(3).status().code(), StatusCode::kInvalidArgument);
  int q = 0;
  EXPECT_TRUE(quarter(8, &q).ok());
  EXPECT_EQ(q, 2);
  EXPECT_EQ(quarter(6, &q).message(), "odd");
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<int> r{Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> r = internal_error("boom");
  EXPECT_DEATH((void)r.value(), "boom");
}

}  // namespace
}  // namespace sluice
