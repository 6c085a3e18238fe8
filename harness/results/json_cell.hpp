// The JSON value of one results cell, so that JSON Lines carry numbers, booleans and nulls, not
// strings: an empty cell is null; the problem's flags (causal, kv_cache) are booleans; its words
// and text, and the text columns listed in json_cell.cpp, stay strings (a name or a commit may look
// like a number); every other cell that parses completely as a finite number is a number.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace fa {

nlohmann::json json_cell(const std::string& column, const std::string& text);

}  // namespace fa
