// json_read.cpp — the JSON reader (see json_read.hpp): recursive descent over RFC 8259 JSON,
// nesting bounded so that a hostile file cannot exhaust the stack.
#include "json_read.hpp"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "errors.hpp"

namespace nvfp4 {

namespace {

constexpr int kMaxDepth = 256;

// Appends code point `cp` as UTF-8.
void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
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

void write_compact(std::ostream& os, const JsonValue& v);

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

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("JSON: " + what + " at byte " + std::to_string(i_));
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  void literal(const char* word) {
    for (const char* p = word; *p; ++p, ++i_)
      if (i_ >= s_.size() || s_[i_] != *p) fail(std::string("expected ") + word);
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    skip_ws();
    if (i_ >= s_.size()) fail("unexpected end of text");
    JsonValue v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type_ = JsonValue::Type::Object;
      if (eat('}')) return v;
      do {
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != '"') fail("expected a member name");
        std::string k = string();
        expect(':');
        v.members_.emplace_back(std::move(k), value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type_ = JsonValue::Type::Array;
      if (eat(']')) return v;
      do v.items_.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type_ = JsonValue::Type::String;
      v.string_ = string();
    } else if (c == 't') {
      literal("true");
      v.type_ = JsonValue::Type::Bool;
      v.bool_ = true;
    } else if (c == 'f') {
      literal("false");
      v.type_ = JsonValue::Type::Bool;
    } else if (c == 'n') {
      literal("null");
    } else {
      number(v);
    }
    return v;
  }

  void number(JsonValue& v) {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("expected a digit");
    };
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') ++i_;
    else digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    v.type_ = JsonValue::Type::Number;
    v.string_ = s_.substr(start, i_ - start);
    v.number_ = std::strtod(v.string_.c_str(), nullptr);
  }

  uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= uint32_t(h - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return cp;
  }

  // The length of the valid UTF-8 sequence at s_[i_], or 0 when it is not one.
  size_t utf8_length() const {
    const auto b = [&](size_t k) { return i_ + k < s_.size() ? (unsigned char)s_[i_ + k] : 0u; };
    const unsigned c = b(0);
    const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
      if (!cont(1) || !cont(2)) return 0;
      if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
      if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
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

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const unsigned char c = (unsigned char)s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) fail("control character in a string");
      if (c == '\\') {
        if (++i_ >= s_.size()) fail("unterminated escape");
        const char e = s_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF && i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
              const size_t save = i_;
              i_ += 2;
              const uint32_t lo = hex4();
              if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              else i_ = save;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // a lone surrogate
            put_utf8(out, cp);
            break;
          }
          default: --i_; fail("bad escape");
        }
        continue;
      }
      if (c < 0x80) {
        out += char(c);
        ++i_;
        continue;
      }
      const size_t n = utf8_length();
      if (n == 0) {
        put_utf8(out, 0xFFFD);
        ++i_;
      } else {
        out.append(s_, i_, n);
        i_ += n;
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

JsonValue JsonValue::parse(const std::string& text) { return JsonParser(text).document(); }

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
