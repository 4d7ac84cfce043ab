// The object store's pieces that need no server: URLs, the AWS
// configuration's sources and precedence, and S3's XML answers (as moto's
// S3 server wrote them, tests/data/fuzz/text). The requests themselves are
// tested against a real server in tests/interop/test_s3.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "base/file_util.h"
#include "remote/aws_config.h"
#include "remote/url.h"
#include "remote/xml.h"
#include "tests/temp_dir.h"

namespace sluice::remote {
namespace {

TEST(Url, ParsesS3AndHttp) {
  auto u = parse_url("s3://my-bucket/data/train-00000.tfrecord");
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_EQ(u->scheme, ObjectUrl::Scheme::kS3);
  EXPECT_EQ(u->bucket, "my-bucket");
  EXPECT_EQ(u->key, "data/train-00000.tfrecord");
  auto h = parse_url("HTTPS://example.com/x.tfrecord");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->scheme, ObjectUrl::Scheme::kHttp);
  EXPECT_TRUE(is_url("S3://b/k"));
  EXPECT_FALSE(is_url("/data/s3://x"));
}

TEST(Url, RefusesBadBucketsNamingThem) {
  for (const char* bad : {"s3://", "s3://ab/k", "s3://Upper/k", "s3://-dash/k", "s3://a b/k"}) {
    auto u = parse_url(bad);
    ASSERT_FALSE(u.ok()) << bad;
    EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(u.status().message().find(bad), std::string_view::npos) << u.status().to_string();
  }
}

TEST(Url, EncodesAsS3SignsAndJoinsWithOneSlash) {
  EXPECT_EQ(uri_encode("a b/c+d~e", true), "a%20b/c%2Bd~e");
  EXPECT_EQ(uri_encode("a b/c", false), "a%20b%2Fc");
  EXPECT_EQ(uri_encode("\xc3\xa9", false), "%C3%A9");
  EXPECT_EQ(join("s3://b/p/", "/x"), "s3://b/p/x");
  EXPECT_EQ(join("s3://b/p", "x"), "s3://b/p/x");
}

TEST(Ini, ReadsSectionsKeysAndNestedBlocks) {
  auto text = detail::read_file(std::string(SLUICE_TEST_DATA) + "/fuzz/text/aws_config.ini");
  ASSERT_TRUE(text.ok());
  auto ini = parse_ini(*text, "aws_config.ini");
  ASSERT_TRUE(ini.ok()) << ini.status().to_string();
  EXPECT_EQ((*ini)["default"]["aws_access_key_id"], "AKIDEXAMPLE");
  EXPECT_EQ((*ini)["profile dev"]["region"], "eu-west-1");
  EXPECT_EQ((*ini)["profile dev"]["s3.endpoint_url"], "http://127.0.0.1:9000");
}

TEST(Ini, NamesTheBadLine) {
  auto ini = parse_ini("[default]\nregion = x\nnot a setting\n", "/home/u/.aws/config");
  ASSERT_FALSE(ini.ok());
  EXPECT_EQ(ini.status().message(),
            "/home/u/.aws/config: line 3: expected 'key = value' or '[section]'");
  EXPECT_FALSE(parse_ini("key = before any section\n", "f").ok());
  EXPECT_FALSE(parse_ini("[open\n", "f").ok());
}

struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> fn() {
    return [this](const char* k) -> const char* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(AwsConfig, EnvironmentBeatsFilesAndProfilesAreChosen) {
  TempDir dir;
  std::ofstream(dir.path() + "/credentials")
      << "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"
         "[other]\naws_access_key_id = OTHERKEY\naws_secret_access_key = othersecret\n"
         "aws_session_token = tok\n";
  std::ofstream(dir.path() + "/config")
      << "[profile other]\nregion = eu-central-1\nendpoint_url = http://minio:9000/\n";
  FakeEnv env{{{"AWS_SHARED_CREDENTIALS_FILE", dir.path() + "/credentials"},
               {"AWS_CONFIG_FILE", dir.path() + "/config"}}};
  auto c = load_aws_config(env.fn());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->access_key, "FILEKEY");
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->endpoint, "");

  env.vars["AWS_PROFILE"] = "other";
  c = load_aws_config(env.fn());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key, "OTHERKEY");
  EXPECT_EQ(c->session_token, "tok");
  EXPECT_EQ(c->region, "eu-central-1");
  EXPECT_EQ(c->endpoint, "http://minio:9000");
  EXPECT_EQ(c->credentials_from, dir.path() + "/credentials [other]");

  env.vars["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env.vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";
  env.vars["AWS_REGION"] = "ap-south-1";
  env.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1";
  env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:2";
  c = load_aws_config(env.fn());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->access_key, "ENVKEY");
  EXPECT_EQ(c->session_token, "");  // not the file's: a token belongs to its key
  EXPECT_EQ(c->region, "ap-south-1");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:2");  // the S3-specific one wins
}

TEST(AwsConfig, NoFilesMeansAnonymousAndAKeyWithoutSecretIsAnError) {
  FakeEnv env{{{"HOME", "/nonexistent"}}};
  auto c = load_aws_config(env.fn());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_credentials());
  env.vars["AWS_ACCESS_KEY_ID"] = "K";
  c = load_aws_config(env.fn());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no secret access key"), std::string_view::npos);
}

TEST(Xml, ReadsMotosListingPageWithEntitiesAndToken) {
  auto text = detail::read_file(std::string(SLUICE_TEST_DATA) + "/fuzz/text/s3_list_page.xml");
  ASSERT_TRUE(text.ok());
  auto page = parse_list_page(*text, "s3://bkt1/d/");
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "d/a&b <x>.tfrecord");
  EXPECT_EQ(page->objects[0].size, 10u);
  EXPECT_TRUE(page->truncated);
  EXPECT_FALSE(page->next_token.empty());
}

TEST(Xml, ErrorsAndRefusals) {
  auto text = detail::read_file(std::string(SLUICE_TEST_DATA) + "/fuzz/text/s3_error.xml");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(parse_error_body(*text), "NoSuchKey: The specified key does not exist.");
  EXPECT_EQ(parse_error_body("<html>bad gateway</html>"), "");
  EXPECT_FALSE(parse_list_page("<html/>", "s3://b/").ok());
  EXPECT_FALSE(parse_list_page("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size>"
                               "</Contents></ListBucketResult>",
                               "s3://b/")
                   .ok());
  EXPECT_FALSE(xml_text("a &bogus; b").ok());
  EXPECT_FALSE(xml_text("&#xD800;").ok());
  EXPECT_EQ(*xml_text("&#233;&#x41;&amp;"),
            "\xc3\xa9"
            "A&");
  // <Key> is not <KeyCount>.
  EXPECT_EQ(xml_elements("<KeyCount>2</KeyCount><Key>k</Key>", "Key").size(), 1u);
}

}  // namespace
}  // namespace sluice::remote
