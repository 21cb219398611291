// json_read.hpp — the JSON reader for the harness's own reports: the verify/bisect report
// (report.cpp write_json) and the bench report (bench_cli.cpp), so that the JUnit and HTML writers
// (junit.hpp, html_report.hpp) take a report as their input whether it was written by this run or
// read back from a file. The parsing is nlohmann/json's (its SAX interface, in json_read.cpp);
// json_read.cpp adds the guarantees below. to_json hands a value read here to a writer that copies
// it into a document of its own (merge, bench).
//
//   const JsonValue r = JsonValue::parse(text);         // InputError, with the byte offset, if not JSON
//   for (const auto& t : r.at("trials").items()) t.str_or("outcome", "?");
//
// Objects keep their members in the order written (the writers' order is meaningful: stage order,
// histogram bucket order). Strings are returned as UTF-8; bytes that are not valid UTF-8 (a child's
// log may hold anything) are replaced by U+FFFD, so every string is safe to put into XML or HTML
// after escaping. Numbers keep the text they were written as, so integers print exactly; a number
// beyond the range of a double is refused. A value nested inside more than 256 arrays or objects is
// refused. Duplicate member names are all kept; find() and at() return the first. A UTF-8 byte
// order mark before the text is skipped.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace nvfp4 {

class JsonValue {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;
  // Parses one JSON text (surrounding whitespace allowed); throws InputError naming the offset.
  static JsonValue parse(const std::string& text);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  // Typed access; each throws InputError when the value has another type.
  bool boolean() const;
  double number() const;
  const std::string& str() const;                 // a string's value
  const std::vector<JsonValue>& items() const;    // an array's elements
  const std::vector<Member>& members() const;     // an object's members, in written order

  // The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* find(const std::string& key) const;
  // The member `key`; throws InputError when absent.
  const JsonValue& at(const std::string& key) const;
  // Lenient lookups for optional fields: the fallback when absent or of another type.
  std::string str_or(const std::string& key, const std::string& fallback) const;
  double number_or(const std::string& key, double fallback) const;

  // The value as one line of text: a string as itself, a number as written, true/false/null, and
  // arrays and objects as compact JSON. For rendering fields the writers do not know.
  std::string text() const;

 private:
  friend class JsonParser;
  Type type_ = Type::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;  // a string's value, or a number's text
  std::vector<JsonValue> items_;
  std::vector<Member> members_;
};

// An object's members as (dotted key, text) pairs, nested objects flattened ("gpumode_check.pass"),
// arrays as compact JSON; members named in `skip` (top level only) are left out. For showing fields
// whose meaning the renderer does not know, so that new report fields appear without code changes.
std::vector<std::pair<std::string, std::string>> flatten(const JsonValue& object,
                                                         const std::vector<std::string>& skip = {});

// The value as a document to write (check_json.hpp): members in the same order, a number as the
// integer or double its text reads as, so that json_text writes back the same values. Of
// duplicate member names the last value is kept, in the first one's place.
nlohmann::ordered_json to_json(const JsonValue& v);

// Reads and parses a whole file; InputError names the file when it cannot be read or parsed.
JsonValue read_json_file(const std::string& path);

// ---- the harness's report format (report.cpp write_json) ----

// True for a bench report (bench_cli.cpp: "mode": "bench"); the others are verify/bisect reports.
bool is_bench_report(const JsonValue& report);
// A trial's case as CaseSpec::name() writes it ("33x65x160 edge seed 7", "case dir DIR"), from the
// trial's "case" object (its "name" when the report carries one).
std::string trial_case_name(const JsonValue& trial);

}  // namespace nvfp4
