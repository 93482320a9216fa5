# Checks that each module sees, on its include path, exactly the modules the architecture lets it
# use (docs/architecture.md, "Modules"): the compiler is asked, for every module and every other
# module, whether a header of the other is reachable (__has_include, the same search a quoted
# #include makes). A module that sees one it may not use, or misses one it may, fails the test.
#   cmake -DLAYERS=<build>/layers -DSRC=<source>/src -DCXX=<compiler> -P check_layers.cmake

# target: the modules it may include (itself and everything below it).
set(allowed_ward_common     common)
set(allowed_ward_libssl     libssl)
set(allowed_ward_policy     policy common)
set(allowed_ward_enforce    enforce policy common)
set(allowed_ward_enforce_bpf      enforce common)
set(allowed_ward_seccomp_compile  enforce common)
set(allowed_ward_seccomp_gen      enforce common)
set(allowed_ward_net        net policy common libssl)
set(allowed_ward_audit      audit common)
set(allowed_ward_supervisor supervisor enforce net audit policy common libssl)
set(allowed_ward_api        api supervisor enforce net audit policy common libssl)
set(allowed_ward_oci        oci supervisor enforce net audit policy common libssl)
set(allowed_ward            cli api oci supervisor enforce net audit policy common libssl)
set(targets ward_common ward_libssl ward_policy ward_enforce ward_enforce_bpf
    ward_seccomp_compile ward_seccomp_gen ward_net ward_audit ward_supervisor ward_api ward_oci
    ward)
set(modules common libssl policy enforce net audit supervisor api oci cli)

# One header of each module stands for the module.
foreach(module IN LISTS modules)
  file(GLOB headers RELATIVE ${SRC} ${SRC}/${module}/*.h)
  list(SORT headers)
  list(GET headers 0 header_${module})
endforeach()

set(failures "")
foreach(target IN LISTS targets)
  if(NOT IS_DIRECTORY ${LAYERS}/${target})
    string(APPEND failures "  ${target}: no include layer at ${LAYERS}/${target}\n")
    continue()
  endif()
  set(probe "")
  foreach(module IN LISTS modules)
    string(APPEND probe "#if __has_include(\"${header_${module}}\")\nvisible ${module}\n#endif\n")
  endforeach()
  file(WRITE ${LAYERS}/probe_${target}.cc "${probe}")
  execute_process(COMMAND ${CXX} -E -P -nostdinc -I ${LAYERS}/${target} ${LAYERS}/probe_${target}.cc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  file(REMOVE ${LAYERS}/probe_${target}.cc)
  if(NOT rc EQUAL 0)
    string(APPEND failures "  ${target}: the compiler failed: ${err}\n")
    continue()
  endif()
  string(REGEX MATCHALL "visible [a-z]+" seen "${out}")
  string(REPLACE "visible " "" seen "${seen}")
  foreach(module IN LISTS modules)
    list(FIND seen ${module} is_seen)
    list(FIND allowed_${target} ${module} is_allowed)
    if(is_seen GREATER -1 AND is_allowed EQUAL -1)
      string(APPEND failures "  ${target} can include ${module}/ but may not use it\n")
    elseif(is_seen EQUAL -1 AND is_allowed GREATER -1)
      string(APPEND failures "  ${target} cannot include ${module}/ though it may use it\n")
    endif()
  endforeach()
endforeach()

if(failures)
  message(FATAL_ERROR "module layering differs from the architecture:\n${failures}"
          "Fix the module's DEPS in its CMakeLists.txt, or, if the architecture changed, the "
          "table in this file and docs/architecture.md together.")
endif()
list(LENGTH targets n)
message(STATUS "layering: ${n} targets see exactly the modules they may use")
