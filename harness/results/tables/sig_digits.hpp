// Numbers for tables: three significant digits at every magnitude (0.00123, 0.0456, 1.23, 45.6,
// 789, 1230), so small problems never print as "0.00".
#pragma once
#include <string>

namespace fa {

std::string sig3(double x);

}  // namespace fa
