# Writes a C++ file with every profiles/*.toml as a raw string, keyed by file stem.
file(GLOB files ${DIR}/*.toml)
list(SORT files)
# The profiles are a constant table at namespace scope (initialised before any code runs, and no
# function as long as the profiles); BuiltinProfiles returns them as a vector.
set(body "// Generated from profiles/*.toml. Do not edit.\n#include \"policy/builtin_profiles.h\"\n\n#include <iterator>\n\nnamespace ward::policy {\nnamespace {\n\nconstexpr BuiltinProfile kProfiles[] = {\n")
foreach(f ${files})
  get_filename_component(stem ${f} NAME_WE)
  file(READ ${f} text)
  string(SHA256 hash "${text}")
  string(APPEND body "  {\"${stem}\", R\"ward_profile(${text})ward_profile\", \"${hash}\"},\n")
endforeach()
string(APPEND body "};\n\n}  // namespace\n\nconst std::vector<BuiltinProfile>& BuiltinProfiles() {\n  static const std::vector<BuiltinProfile> kAll(std::begin(kProfiles), std::end(kProfiles));\n  return kAll;\n}\n\n}  // namespace ward::policy\n")
file(WRITE ${OUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
