# After each link of ward (src/cli/CMakeLists.txt, WARD_HOT_TEXT): how many functions of the hot
# list (LIST) the binary (WARD) still defines. A name the code no longer has matches nothing in
# the linker script and its function silently returns to the cold code, so a list that a
# refactor has left behind fails the build here instead.
#   cmake -DWARD=<binary> -DLIST=<hot_functions.txt> -DMIN_PERCENT=<n> -P check_hot_functions.cmake
execute_process(COMMAND nm --defined-only --format=just-symbols ${WARD}
                OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot list the symbols of ${WARD} (nm, from binutils)")
endif()
set(symbols "\n${symbols}")
file(STRINGS ${LIST} names REGEX "^[A-Za-z_][A-Za-z0-9_.]*$")
list(LENGTH names total)
set(found 0)
set(missing "")
foreach(name IN LISTS names)
  string(FIND "${symbols}" "\n${name}\n" at)
  if(at EQUAL -1)
    list(APPEND missing ${name})
  else()
    math(EXPR found "${found} + 1")
  endif()
endforeach()
math(EXPR percent "${found} * 100 / ${total}")
if(percent LESS MIN_PERCENT)
  list(SUBLIST missing 0 5 some)
  string(REPLACE ";" "\n  " some "${some}")
  message(FATAL_ERROR
    "${LIST} is stale: ward defines only ${found} of its ${total} functions (${percent}%, "
    "at least ${MIN_PERCENT}% needed); missing, for example:\n  ${some}\n"
    "Regenerate it as root on a quiet machine (bench/hot_functions.sh says how): "
    "KEEP=${LIST} bench/hot_functions.sh build/bin/ward > list, then move list over it, "
    "or configure with -DWARD_HOT_TEXT=OFF.")
endif()
