// json.hpp — a minimal streaming JSON writer for reports (no parsing; no dependency).
//
//   JsonWriter j(os);
//   j.begin_object(); j.key("outcome").value("PASS"); j.key("ulp").begin_array(); ... j.end_array();
//   j.end_object();
// Non-finite doubles are written as null (JSON has no NaN/inf); callers that need to distinguish
// write a string instead.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace nvfp4 {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& os) : os_(os) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& key(const std::string& k) {
    comma();
    write_string(k);
    os_ << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(const std::string& s) { comma(); write_string(s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(bool b) { comma(); os_ << (b ? "true" : "false"); return *this; }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(int64_t v) { comma(); os_ << v; return *this; }
  JsonWriter& value(uint64_t v) { comma(); os_ << v; return *this; }
  JsonWriter& value(double v) {
    comma();
    if (!std::isfinite(v)) {
      os_ << "null";
    } else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      os_ << buf;
    }
    return *this;
  }
  JsonWriter& null() { comma(); os_ << "null"; return *this; }
  template <class T>
  JsonWriter& array(const std::vector<T>& v) {
    begin_array();
    for (const auto& x : v) value(x);
    return end_array();
  }

 private:
  JsonWriter& open(char c) {
    comma();
    os_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    os_ << c;
    first_.pop_back();
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) os_ << ',';
      first_.back() = false;
    }
  }
  void write_string(const std::string& s) {
    os_ << '"';
    for (unsigned char ch : s) {
      switch (ch) {
        case '"': os_ << "\\\""; break;
        case '\\': os_ << "\\\\"; break;
        case '\n': os_ << "\\n"; break;
        case '\t': os_ << "\\t"; break;
        case '\r': os_ << "\\r"; break;
        default:
          if (ch < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            os_ << buf;
          } else {
            os_ << ch;
          }
      }
    }
    os_ << '"';
  }

  std::ostream& os_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace nvfp4
