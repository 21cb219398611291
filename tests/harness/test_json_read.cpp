// test_json_read.cpp — the JSON reader (harness/report/json_read.hpp) that the JUnit and HTML writers use:
// round trips through the report's own writer (check_json.hpp json_text), the escapes and UTF-8 it must handle,
// the errors it must refuse without crashing, and the harness's real report, whose case names
// must read back exactly as the harness prints them.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "check_json.hpp"
#include "errors.hpp"
#include "harness_cli.hpp"
#include "json_read.hpp"

using namespace nvfp4;

TEST_CASE("json_read: what json_text writes reads back") {
  Json j;
  j["text"] = "quote \" backslash \\ tab \t line\n ctrl \x01 end";
  j["big"] = uint64_t(18446744073709551615ull);
  j["neg"] = int64_t(-42);
  j["pi"] = 3.141592653589793;
  j["tenth"] = 0.1;
  j["inf"] = INFINITY;
  j["yes"] = true;
  j["list"] = Json::array({1, Json{{"a", "b"}}, Json::array()});
  j["empty"] = Json::object();
  const std::string text = json_text(j);
  const JsonValue v = JsonValue::parse(text);
  CHECK(v.at("text").str() == "quote \" backslash \\ tab \t line\n ctrl \x01 end");
  CHECK(v.at("big").text() == "18446744073709551615");  // the number as written, not via double
  CHECK(v.at("neg").number() == -42);
  CHECK(v.at("pi").number() == 3.141592653589793);
  CHECK(v.at("tenth").text() == "0.1");  // the shortest text that reads back as the same double
  CHECK(v.at("inf").is_null());          // the writer's non-finite
  CHECK(v.at("yes").boolean());
  REQUIRE(v.at("list").items().size() == 3);
  CHECK(v.at("list").items()[1].str_or("a", "") == "b");
  CHECK(v.at("empty").members().empty());
  // Members stay in written order (the HTML histogram relies on it).
  std::string order;
  for (const auto& m : v.members()) order += m.first + ",";
  CHECK(order == "text,big,neg,pi,tenth,inf,yes,list,empty,");
  CHECK(v.at("list").text() == "[1,{\"a\":\"b\"},[]]");
  // ... and what is read copies back to the same text (merge and bench copy what they read).
  CHECK(json_text(to_json(v)) == text);
}

TEST_CASE("json_read: json_text writes NaN and infinities as null and every document as UTF-8") {
  const Json j = {{"nan", NAN}, {"inf", INFINITY}, {"-inf", -INFINITY}, {"max", 1.7976931348623157e308}};
  CHECK(json_text(j) == R"({"nan":null,"inf":null,"-inf":null,"max":1.7976931348623157e+308})");
  // A child's log may hold any bytes: those that are not UTF-8 become U+FFFD, valid ones stay, and
  // writing never throws.
  const Json log = {{"child_log", "a\xFF\xC3\xA9z"}};
  CHECK(json_text(log) == "{\"child_log\":\"a\xEF\xBF\xBD\xC3\xA9z\"}");
}

TEST_CASE("json_read: escapes and UTF-8") {
  CHECK(JsonValue::parse(R"("\u00e9\u20ac\ud83d\ude00\/")").str() == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80/");
  CHECK(JsonValue::parse(R"("\ud800x")").str() == "\xEF\xBF\xBDx");  // a lone surrogate
  // Bytes that are not UTF-8 (a child's log may hold anything) become U+FFFD; valid ones stay.
  CHECK(JsonValue::parse("\"a\xFF\xC3\xA9\xC0\xAF\xED\xA0\x80z\"").str() ==
        "a\xEF\xBF\xBD\xC3\xA9\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
}

TEST_CASE("json_read: malformed input is an InputError naming the offset") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"open", "01", "1.", "-", "tru", "{} x", "\"a\x01\"",
                          "\"\\x\"", "{1:2}", "nul"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(JsonValue::parse(bad), InputError);
  }
  CHECK_THROWS_WITH_AS(JsonValue::parse("[1, 2,, 3]"), doctest::Contains("at byte 6"), InputError);
  // Deep nesting is refused, not a stack overflow.
  CHECK_THROWS_AS(JsonValue::parse(std::string(100000, '[') + std::string(100000, ']')), InputError);
  CHECK_NOTHROW(JsonValue::parse(std::string(200, '[') + std::string(200, ']')));
  CHECK_THROWS_AS(JsonValue::parse("{}").at("x"), InputError);
  CHECK_THROWS_AS(JsonValue::parse("3").str(), InputError);
  CHECK_THROWS_AS(read_json_file("/nonexistent/report.json"), InputError);
}

TEST_CASE("json_read: what the reader adds around the library") {
  // Offsets count the caller's bytes, also after invalid UTF-8 that became the 3-byte U+FFFD.
  CHECK_THROWS_WITH_AS(JsonValue::parse("[\"\xFF\xFF\", 1,, 2]"), doctest::Contains("at byte 9"), InputError);
  CHECK_THROWS_WITH_AS(JsonValue::parse("[1, 2,, 3]"), doctest::Contains("expected"), InputError);
  // Numbers keep their text, also where the library reads only a value.
  CHECK(JsonValue::parse("-0").text() == "-0");
  CHECK(std::signbit(JsonValue::parse("-0").number()));
  CHECK(JsonValue::parse("123456789012345678901234567890").text() == "123456789012345678901234567890");
  CHECK(JsonValue::parse("[1E+2,-0.50]").text() == "[1E+2,-0.50]");
  // A number beyond the range of a double is refused (the writer writes non-finite values as null).
  CHECK_THROWS_WITH_AS(JsonValue::parse("[1e400]"), doctest::Contains("at byte"), InputError);
  // The depth limit: 256 containers around a value; an empty container may be the 257th.
  const auto nest = [](int n, const std::string& inner) { return std::string(n, '[') + inner + std::string(n, ']'); };
  CHECK_NOTHROW(JsonValue::parse(nest(256, "1")));
  CHECK_NOTHROW(JsonValue::parse(nest(257, "")));
  CHECK_THROWS_WITH_AS(JsonValue::parse(" " + nest(257, " 1")),
                       doctest::Contains("nesting deeper than 256 at byte 259"), InputError);
  CHECK_THROWS_WITH_AS(JsonValue::parse(nest(256, "{\"k\": 2}")), doctest::Contains("at byte 262"), InputError);
  // A NUL byte ends the text for the library; after a value it is still text after the value.
  CHECK_THROWS_WITH_AS(JsonValue::parse(std::string("[1] \0 x", 7)), doctest::Contains("at byte 4"), InputError);
  CHECK_THROWS_AS(JsonValue::parse(std::string("[1\0]", 4)), InputError);
  CHECK_THROWS_AS(JsonValue::parse(std::string("\"a\0\"", 4)), InputError);
  // Duplicate member names are all kept in order; lookups find the first.
  const JsonValue dup = JsonValue::parse(R"({"a":1,"b":2,"a":3})");
  CHECK(dup.members().size() == 3);
  CHECK(dup.at("a").text() == "1");
  CHECK(dup.text() == R"({"a":1,"b":2,"a":3})");
  // Unpaired surrogates around a pair, and an escaped backslash before "u".
  CHECK(JsonValue::parse(R"("\udc00\ud83d\ude00\ud800")").str() == "\xEF\xBF\xBD\xF0\x9F\x98\x80\xEF\xBF\xBD");
  CHECK(JsonValue::parse(R"("\\ud800")").str() == "\\ud800");
  // A byte order mark before the text is skipped.
  CHECK(JsonValue::parse("\xEF\xBB\xBF[1]").text() == "[1]");
}

TEST_CASE("json_read: flatten names nested fields with dots and skips what it is told") {
  const JsonValue v = JsonValue::parse(R"({"a":1,"b":{"c":"x","d":{"e":null}},"f":[1,2],"g":true})");
  const auto kv = flatten(v, {"g"});
  REQUIRE(kv.size() == 4);
  CHECK(kv[0] == std::make_pair(std::string("a"), std::string("1")));
  CHECK(kv[1] == std::make_pair(std::string("b.c"), std::string("x")));
  CHECK(kv[2] == std::make_pair(std::string("b.d.e"), std::string("null")));
  CHECK(kv[3] == std::make_pair(std::string("f"), std::string("[1,2]")));
}

TEST_CASE("json_read: the harness's report reads back; case names as the harness prints them") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--verify plain,fused --backend cpu --shape 7x13x48,1x1x16 --dist normal,edge --seed 3 --json " +
                                  dir + "/r.json");
  REQUIRE(r.rc == 0);
  const JsonValue report = read_json_file(dir + "/r.json");
  CHECK_FALSE(is_bench_report(report));
  const auto& trials = report.at("trials").items();
  REQUIRE(trials.size() == 8);
  double passes = report.at("summary").at("PASS").number();
  CHECK(passes == 8);
  for (const auto& t : trials) {
    const std::string line = t.at("backend").str() + " " + t.at("combo").str() + " " + trial_case_name(t) + "  PASS";
    CAPTURE(line);
    CHECK(harness_cli::has(r.out, line));
  }
  // A case directory's name.
  const std::string golden = std::string(NVFP4_SOURCE_DIR) + "/data/golden/ragged_5x7x64_seed1";
  const auto d = harness_cli::run("--verify plain --backend cpu --inputs " + golden + " --json " + dir + "/d.json");
  REQUIRE(d.rc == 0);
  const JsonValue dr = read_json_file(dir + "/d.json");
  const std::string name = trial_case_name(dr.at("trials").items().at(0));
  CHECK(name == "case dir " + golden);
  CHECK(harness_cli::has(d.out, "cpu plain " + name + "  PASS"));
}

TEST_CASE("json_read: cases that differ only in their alphas keep different names") {
  // A report written before trials carried "name": the name is rebuilt from shape, dist, seed
  // and, when not 1, the alphas (two such cases once collapsed into one grid column).
  const JsonValue plain = JsonValue::parse(
      R"({"case":{"shape":"33x65x160","dist":"normal","seed":7,"alpha1":1,"alpha2":1}})");
  const JsonValue scaled = JsonValue::parse(
      R"({"case":{"shape":"33x65x160","dist":"normal","seed":7,"alpha1":-1.5,"alpha2":0.3}})");
  CHECK(trial_case_name(plain) == "33x65x160 normal seed 7");
  CHECK(trial_case_name(scaled) != trial_case_name(plain));
  CHECK(trial_case_name(scaled).find("alpha") != std::string::npos);
  // A report that carries the name uses it as written.
  const JsonValue named = JsonValue::parse(R"({"case":{"name":"33x65x160 normal seed 7 alpha -1.5,0.3"}})");
  CHECK(trial_case_name(named) == "33x65x160 normal seed 7 alpha -1.5,0.3");
}
