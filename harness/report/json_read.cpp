// json_read.cpp — the JSON reader (see json_read.hpp) on nlohmann/json's SAX parser. The library
// judges the grammar (RFC 8259) and decodes escapes; JsonParser below builds JsonValue from its
// events in document order. What the library does not do the way json_read.hpp promises is done
// around it, in one pass over the text before the library sees it (prepare):
//   - inside strings, each byte that does not begin a valid UTF-8 sequence becomes U+FFFD, and each
//     \u escape of a surrogate that is not half of a high-low pair becomes \uFFFD (the library
//     refuses both; the old reader, and so the contract, replaced them);
//   - numbers keep the text they were written as (the library gives integers only as values, so
//     "-0" and the digits of a huge integer would be lost);
//   - a value nested inside more than kMaxDepth containers is refused, naming where it starts (the
//     library has no limit; JsonValue's destructor and text() recurse);
//   - a NUL byte outside strings is refused (the library takes it as the end of the text).
// Every error is an InputError naming the byte offset in the caller's text, with the library's
// description of what is wrong. The library refuses what the old reader did not in one case only:
// a number beyond the range of a double (the old reader read it as infinity).
#include "json_read.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "errors.hpp"

namespace nvfp4 {

namespace {

// The deepest a value may be nested: at most kMaxDepth containers around it.
constexpr size_t kMaxDepth = 256;
constexpr size_t kNone = size_t(-1);
const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD in UTF-8 (3 bytes)

// The length of the valid UTF-8 sequence at s[i] (a byte >= 0x80), or 0 when it is not one
// (Unicode's well-formed sequences: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? (unsigned char)s[i + k] : 0u; };
  const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
  const unsigned c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // beyond U+10FFFF
    return 4;
  }
  return 0;
}

// The code unit of the escape "\uXXXX" at s[i], or kNone when s[i] does not start one.
size_t u_escape_at(const std::string& s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return kNone;
  size_t cp = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    const char h = s[k];
    cp <<= 4;
    if (h >= '0' && h <= '9') cp |= size_t(h - '0');
    else if (h >= 'a' && h <= 'f') cp |= size_t(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F') cp |= size_t(h - 'A' + 10);
    else return kNone;
  }
  return cp;
}

bool is_high_surrogate(size_t cp) { return cp >= 0xD800 && cp <= 0xDBFF; }
bool is_low_surrogate(size_t cp) { return cp >= 0xDC00 && cp <= 0xDFFF; }
bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The text as the library is given it, and what the library's events cannot tell.
struct Prepared {
  std::string text;                  // the input with the replacements of the file comment
  std::vector<size_t> widened;       // ascending offsets in `text` of each U+FFFD that replaced one byte
  std::vector<std::string> numbers;  // the text of every number token, in document order
  size_t too_deep = kNone;           // the input offset of the first value inside > kMaxDepth containers
  size_t nul = kNone;                // the input offset of the first NUL byte outside strings

  // An offset in `text` as an offset in the input: each widened byte moved what follows by 2.
  size_t input_offset(size_t at) const {
    const size_t k = size_t(std::upper_bound(widened.begin(), widened.end(), at) - widened.begin());
    if (k > 0 && at < widened[k - 1] + 3) return widened[k - 1] - 2 * (k - 1);  // inside a U+FFFD
    return at - 2 * k;
  }
};

// Copies the escape at s[i] (a backslash inside a string) to `out`; returns the index after it. A \u
// escape of a surrogate that is not half of a high-low pair is written as \uFFFD, the same length.
// Any other escape is copied as its backslash and the byte after it, for the library to judge.
size_t copy_escape(const std::string& s, size_t i, std::string& out) {
  const size_t cp = u_escape_at(s, i);
  if (is_high_surrogate(cp) && is_low_surrogate(u_escape_at(s, i + 6))) {
    out.append(s, i, 12);
    return i + 12;
  }
  if (is_high_surrogate(cp) || is_low_surrogate(cp)) {
    out += "\\uFFFD";
    return i + 6;
  }
  const size_t n = std::min<size_t>(2, s.size() - i);
  out.append(s, i, n);
  return i + n;
}

// One pass over the input. Where the input is valid JSON up to some point, this pass's view of it
// up to that point (what is inside a string, how deep, which tokens are numbers) is the library's,
// so the library's events there match what is recorded here; past the library's first error
// nothing recorded is used.
Prepared prepare(const std::string& s) {
  Prepared p;
  p.text.reserve(s.size());
  bool in_string = false;
  size_t depth = 0;         // containers open here (outside strings)
  bool value_next = false;  // after '[' or ':' the next token is a value (or, after '[', a ']')
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        i = copy_escape(s, i, p.text);
        continue;
      }
      const size_t n = (unsigned char)c < 0x80 ? 1 : utf8_length(s, i);
      if (n == 0) {
        p.widened.push_back(p.text.size());
        p.text += kReplacement;
        ++i;
        continue;
      }
      in_string = c != '"';
      p.text.append(s, i, n);
      i += n;
      continue;
    }
    if (is_space(c)) {
      p.text += c;
      ++i;
      continue;
    }
    if (value_next && depth > kMaxDepth && c != ']' && p.too_deep == kNone) p.too_deep = i;
    if (c == '\0' && p.nul == kNone) p.nul = i;
    value_next = c == '[' || c == ':';
    size_t n = 1;
    if (c == '[' || c == '{') ++depth;
    else if ((c == ']' || c == '}') && depth > 0) --depth;
    else if (c == '"') in_string = true;
    else if (c == '-' || (c >= '0' && c <= '9')) {
      while (i + n < s.size() && is_number_char(s[i + n])) ++n;
      p.numbers.push_back(s.substr(i, n));
    }
    p.text.append(s, i, n);
    i += n;
  }
  return p;
}

// The library's message as this reader's: without its prefixes ("[json.exception.parse_error.101]
// parse error at line 1, column 7: syntax error while parsing value - "), whose line and column
// count the prepared text, not the input, and with "unexpected A; expected B" said as the old reader
// said it, "expected B, found A". A message of another form passes through unchanged.
std::string library_message(const std::exception& e) {
  std::string m = e.what();
  const size_t tag = m.find("] ");
  if (m.rfind("[json.exception.", 0) == 0 && tag != std::string::npos) m.erase(0, tag + 2);
  if (m.rfind("parse error", 0) == 0) {
    const size_t colon = m.find(": ");
    if (colon != std::string::npos) m.erase(0, colon + 2);
  }
  const size_t dash = m.find(" - ");
  if (m.rfind("syntax error while parsing ", 0) == 0 && dash != std::string::npos) m.erase(0, dash + 3);
  const size_t expected = m.find("; expected ");
  if (m.rfind("unexpected ", 0) == 0 && expected != std::string::npos)
    m = m.substr(expected + 2) + ", found " + m.substr(11, expected - 11);
  return m;
}

const char* type_name(JsonValue::Type t) {
  switch (t) {
    case JsonValue::Type::Null: return "null";
    case JsonValue::Type::Bool: return "a boolean";
    case JsonValue::Type::Number: return "a number";
    case JsonValue::Type::String: return "a string";
    case JsonValue::Type::Array: return "an array";
    case JsonValue::Type::Object: return "an object";
  }
  return "?";
}

void write_quoted(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') os << '\\' << char(c);
    else if (c == '\n') os << "\\n";
    else if (c < 0x20) os << "\\u00" << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
    else os << char(c);
  }
  os << '"';
}

// Compact JSON of a value: numbers as written, strings re-escaped, members in order.
void write_compact(std::ostream& os, const JsonValue& v) {
  switch (v.type()) {
    case JsonValue::Type::Null: os << "null"; break;
    case JsonValue::Type::Bool: os << (v.boolean() ? "true" : "false"); break;
    case JsonValue::Type::Number: os << v.text(); break;
    case JsonValue::Type::String: write_quoted(os, v.str()); break;
    case JsonValue::Type::Array: {
      os << '[';
      bool first = true;
      for (const auto& x : v.items()) {
        if (!first) os << ',';
        first = false;
        write_compact(os, x);
      }
      os << ']';
      break;
    }
    case JsonValue::Type::Object: {
      os << '{';
      bool first = true;
      for (const auto& m : v.members()) {
        if (!first) os << ',';
        first = false;
        write_quoted(os, m.first);
        os << ':';
        write_compact(os, m.second);
      }
      os << '}';
      break;
    }
  }
}

}  // namespace

// Builds one JsonValue from the library's SAX events over prepare()'s text. Invariants: open_ holds
// the containers begun and not yet ended, outermost first, and keys_[k] the last member name read
// in open_[k]; a finished value is appended to open_.back() (under keys_.back() in an object) or,
// with no container open, is the document. Duplicate member names are all kept, in order.
class JsonParser final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonParser(const Prepared& p) : p_(p) {}

  JsonValue document() {
    // Every failure throws (parse_error below), so a false return cannot happen; it is checked anyway.
    if (!nlohmann::json::sax_parse(p_.text, this)) throw InputError("JSON: not a JSON text");
    // The library takes a NUL byte outside strings as the end of the text: one there, after a
    // complete value, is text after the value, which JSON does not allow.
    if (p_.nul != kNone) throw InputError("JSON: a NUL byte after the JSON value at byte " + std::to_string(p_.nul));
    return std::move(root_);
  }

  bool null() override { return put(JsonValue()); }
  bool boolean(bool b) override {
    JsonValue v;
    v.type_ = JsonValue::Type::Bool;
    v.bool_ = b;
    return put(std::move(v));
  }
  bool number_integer(number_integer_t n) override { return number(std::to_string(n)); }
  bool number_unsigned(number_unsigned_t n) override { return number(std::to_string(n)); }
  bool number_float(number_float_t, const string_t& s) override { return number(s); }
  bool string(string_t& s) override {
    JsonValue v;
    v.type_ = JsonValue::Type::String;
    v.string_ = std::move(s);
    return put(std::move(v));
  }
  bool binary(binary_t&) override { return false; }  // JSON text has no binary values
  bool start_object(std::size_t) override { return open(JsonValue::Type::Object); }
  bool key(string_t& k) override {
    keys_.back() = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(JsonValue::Type::Array); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // `position` counts the bytes the library read, the offending one included.
    const size_t at = p_.input_offset(position > 0 ? position - 1 : 0);
    throw InputError("JSON: " + library_message(e) + " at byte " + std::to_string(at));
  }

 private:
  // A value begins at depth open_.size(); refused beyond kMaxDepth (the library has no limit).
  void check_depth() const {
    if (open_.size() <= kMaxDepth) return;
    throw InputError("JSON: nesting deeper than " + std::to_string(kMaxDepth) + " at byte " +
                     (p_.too_deep == kNone ? std::string("?") : std::to_string(p_.too_deep)));
  }
  // A number's text is the token as written (prepare), its value what strtod reads from it; the
  // library's text (`fallback`) is used only if the two ever disagree on how many numbers there are.
  bool number(const std::string& fallback) {
    JsonValue v;
    v.type_ = JsonValue::Type::Number;
    v.string_ = next_number_ < p_.numbers.size() ? p_.numbers[next_number_] : fallback;
    ++next_number_;
    v.number_ = std::strtod(v.string_.c_str(), nullptr);
    return put(std::move(v));
  }
  bool put(JsonValue v) {
    check_depth();
    attach(std::move(v));
    return true;
  }
  bool open(JsonValue::Type t) {
    check_depth();
    open_.emplace_back();
    open_.back().type_ = t;
    keys_.emplace_back();
    return true;
  }
  bool close() {
    JsonValue v = std::move(open_.back());
    open_.pop_back();
    keys_.pop_back();
    attach(std::move(v));
    return true;
  }
  void attach(JsonValue v) {
    if (open_.empty()) root_ = std::move(v);
    else if (open_.back().type_ == JsonValue::Type::Array) open_.back().items_.push_back(std::move(v));
    else open_.back().members_.emplace_back(std::move(keys_.back()), std::move(v));
  }

  const Prepared& p_;
  std::vector<JsonValue> open_;
  std::vector<std::string> keys_;
  size_t next_number_ = 0;
  JsonValue root_;
};

JsonValue JsonValue::parse(const std::string& text) {
  const Prepared p = prepare(text);
  return JsonParser(p).document();
}

namespace {
[[noreturn]] void wrong_type(JsonValue::Type want, JsonValue::Type got) {
  throw InputError(std::string("JSON: expected ") + type_name(want) + ", found " + type_name(got));
}
}  // namespace

bool JsonValue::boolean() const {
  if (type_ != Type::Bool) wrong_type(Type::Bool, type_);
  return bool_;
}
double JsonValue::number() const {
  if (type_ != Type::Number) wrong_type(Type::Number, type_);
  return number_;
}
const std::string& JsonValue::str() const {
  if (type_ != Type::String) wrong_type(Type::String, type_);
  return string_;
}
const std::vector<JsonValue>& JsonValue::items() const {
  if (type_ != Type::Array) wrong_type(Type::Array, type_);
  return items_;
}
const std::vector<JsonValue::Member>& JsonValue::members() const {
  if (type_ != Type::Object) wrong_type(Type::Object, type_);
  return members_;
}

const JsonValue* JsonValue::find(const std::string& key) const {
  if (type_ != Type::Object) return nullptr;
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const JsonValue& JsonValue::at(const std::string& key) const {
  const JsonValue* v = find(key);
  if (!v) throw InputError("JSON: no member '" + key + "'");
  return *v;
}

std::string JsonValue::str_or(const std::string& key, const std::string& fallback) const {
  const JsonValue* v = find(key);
  return v && v->is_string() ? v->string_ : fallback;
}

double JsonValue::number_or(const std::string& key, double fallback) const {
  const JsonValue* v = find(key);
  return v && v->is_number() ? v->number_ : fallback;
}

std::string JsonValue::text() const {
  switch (type_) {
    case Type::Null: return "null";
    case Type::Bool: return bool_ ? "true" : "false";
    case Type::Number:
    case Type::String: return string_;
    default: {
      std::ostringstream os;
      write_compact(os, *this);
      return os.str();
    }
  }
}

nlohmann::ordered_json to_json(const JsonValue& v) {
  using Json = nlohmann::ordered_json;
  switch (v.type()) {
    case JsonValue::Type::Null: return nullptr;
    case JsonValue::Type::Bool: return v.boolean();
    case JsonValue::Type::Number: return Json::parse(v.text());  // the library's own number grammar
    case JsonValue::Type::String: return v.str();
    case JsonValue::Type::Array: {
      Json a = Json::array();
      for (const auto& x : v.items()) a.push_back(to_json(x));
      return a;
    }
    case JsonValue::Type::Object: {
      Json o = Json::object();
      for (const auto& m : v.members()) o[m.first] = to_json(m.second);
      return o;
    }
  }
  return nullptr;
}

JsonValue read_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  try {
    return JsonValue::parse(ss.str());
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

namespace {
void flatten_into(const std::string& prefix, const JsonValue& v, std::vector<std::pair<std::string, std::string>>& out) {
  if (!v.is_object()) {
    out.emplace_back(prefix, v.text());
    return;
  }
  for (const auto& m : v.members()) flatten_into(prefix.empty() ? m.first : prefix + "." + m.first, m.second, out);
}
}  // namespace

std::vector<std::pair<std::string, std::string>> flatten(const JsonValue& object, const std::vector<std::string>& skip) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!object.is_object()) return out;
  for (const auto& m : object.members()) {
    bool skipped = false;
    for (const auto& k : skip) skipped |= k == m.first;
    if (!skipped) flatten_into(m.first, m.second, out);
  }
  return out;
}

bool is_bench_report(const JsonValue& report) { return report.str_or("mode", "") == "bench"; }

std::string trial_case_name(const JsonValue& trial) {
  const JsonValue* c = trial.find("case");
  if (!c) return "?";
  if (c->find("name")) return c->str_or("name", "?");
  if (c->find("inputs")) {
    const JsonValue* bl = c->find("batch_last");
    return "case dir " + c->str_or("inputs", "?") + (bl && bl->is_bool() && bl->boolean() ? " (batch-last)" : "");
  }
  const JsonValue* seed = c->find("seed");
  std::string name = c->str_or("shape", "?") + " " + c->str_or("dist", "?") + " seed " + (seed ? seed->text() : "?");
  // Reports written before the case carried its name: the alphas still tell cases apart.
  const JsonValue* a1 = c->find("alpha1");
  const JsonValue* a2 = c->find("alpha2");
  if (a1 && a2 && (a1->text() != "1" || a2->text() != "1")) name += " alpha " + a1->text() + "," + a2->text();
  return name;
}

}  // namespace nvfp4
