# Run as a script at every build (the myconv_build_info target): records what source the programs
# are built from, so that every result names it (core/system_info.hpp, results/README.md).
#
#   cmake -DSOURCE_DIR=... -DOUT=build_info.cpp -DDIFF=source.diff -DVERSION=... [-DGIT_COMMIT=...]
#         -P BuildInfo.cmake
#
# Writes OUT (a .cpp with the commit, whether the tree differed from it, the difference's SHA-256
# and size, where the record came from) and DIFF (the difference itself, which OUT embeds with
# .incbin), each only when its content changed, so that a build with nothing new compiles nothing.
#
# Where the record comes from, in order:
# - git: SOURCE_DIR is the top of its own checkout (an archive unpacked inside another repository
#   must not take that one's commit): the commit is HEAD; the difference is the working tree
#   against HEAD, untracked files that are not ignored included (a copy of the index takes them
#   in, the real index is left alone); results/ is left out: it holds outputs, not source.
# - stamp: a tree without its checkout that scripts/offline/stamp_source.sh stamped when it was
# copied
#   (.myconv-source/: commit, source.diff, manifest.sha256). The manifest is checked: files
#   changed, added or removed since the stamp are named (modified_since_stamp) and the record
#   says "-modified", never passing them off as the stamped source.
# - cmake_option: -DMYCONV_GIT_COMMIT=... (no difference known).
# - unknown.

set(commit "")
set(origin "unknown")
set(diff "")
set(modified "")
set(stamp_diff "")

execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --show-toplevel
                OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
set(is_checkout FALSE)
if(rc EQUAL 0)
  file(REAL_PATH "${SOURCE_DIR}" source_real)
  file(REAL_PATH "${top}" top_real)
  if(source_real STREQUAL top_real)
    set(is_checkout TRUE)
  endif()
endif()

if(is_checkout)
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --git-path index
                  OUTPUT_VARIABLE index OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT IS_ABSOLUTE "${index}")
    set(index "${SOURCE_DIR}/${index}")
  endif()
  set(tmp_index "${DIFF}.index")
  if(EXISTS "${index}")
    configure_file("${index}" "${tmp_index}" COPYONLY)  # its stat cache spares rehashing
  else()
    file(REMOVE "${tmp_index}")
  endif()
  set(ENV{GIT_INDEX_FILE} "${tmp_index}")
  execute_process(COMMAND git -C "${SOURCE_DIR}" add -A -- . ":(exclude)results"
                  RESULT_VARIABLE add_rc OUTPUT_QUIET ERROR_QUIET)
  execute_process(COMMAND git -C "${SOURCE_DIR}" diff --cached --binary --no-color --no-ext-diff
                          HEAD -- . ":(exclude)results"
                  OUTPUT_VARIABLE diff RESULT_VARIABLE diff_rc ERROR_QUIET)
  unset(ENV{GIT_INDEX_FILE})
  file(REMOVE "${tmp_index}")
  if(commit STREQUAL "" OR NOT add_rc EQUAL 0 OR NOT diff_rc EQUAL 0)
    set(commit "")  # not a usable checkout (no commit yet, git failing): fall through
    set(diff "")
  else()
    set(origin "git")
  endif()
endif()

if(origin STREQUAL "unknown" AND EXISTS "${SOURCE_DIR}/.myconv-source/commit")
  file(STRINGS "${SOURCE_DIR}/.myconv-source/commit" commit LIMIT_COUNT 1)
  if(EXISTS "${SOURCE_DIR}/.myconv-source/source.diff")
    file(READ "${SOURCE_DIR}/.myconv-source/source.diff" diff)
  endif()
  # Each manifest line: "<sha256>  <path>". Files changed or removed since the stamp, then added.
  file(STRINGS "${SOURCE_DIR}/.myconv-source/manifest.sha256" lines)
  set(listed "")
  set(source_dirs "")  # top-level folders that hold stamped files
  foreach(line IN LISTS lines)
    string(SUBSTRING "${line}" 0 64 want)
    string(SUBSTRING "${line}" 66 -1 path)
    list(APPEND listed "${path}")
    if(path MATCHES "^([^/]+)/")
      list(APPEND source_dirs "${CMAKE_MATCH_1}")
    endif()
    if(NOT EXISTS "${SOURCE_DIR}/${path}")
      list(APPEND modified "${path} (removed)")
    else()
      file(SHA256 "${SOURCE_DIR}/${path}" got)
      if(NOT got STREQUAL want)
        list(APPEND modified "${path}")
      endif()
    endif()
  endforeach()
  # Added files: new ones in the source folders (a copy also carries files git ignores, builds,
  # bundles and results, which are not source, and their rules are git's, not known here).
  list(REMOVE_DUPLICATES source_dirs)
  list(REMOVE_ITEM source_dirs results)
  set(globs "")
  foreach(dir IN LISTS source_dirs)
    list(APPEND globs "${SOURCE_DIR}/${dir}/*")
  endforeach()
  set(present "")
  if(globs)
    file(GLOB_RECURSE present LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" ${globs})
  endif()
  foreach(path IN LISTS present)
    if(path MATCHES "(^|/)__pycache__/|\\.pyc$")
      continue()
    endif()
    list(FIND listed "${path}" at)
    if(at EQUAL -1)
      list(APPEND modified "${path} (added)")
    endif()
  endforeach()
  set(origin "stamp")
endif()

if(origin STREQUAL "unknown" AND NOT "${GIT_COMMIT}" STREQUAL "")
  set(commit "${GIT_COMMIT}")
  set(origin "cmake_option")
endif()

string(LENGTH "${diff}" diff_bytes)
if(diff_bytes GREATER 0)
  string(SHA256 diff_sha "${diff}")
else()
  set(diff_sha "")
endif()
set(short "unknown")
if(NOT commit STREQUAL "")
  string(SUBSTRING "${commit}" 0 12 short)
  if(diff_bytes GREATER 0)
    string(APPEND short "-dirty")
  endif()
  if(modified)
    string(APPEND short "-modified")
  endif()
endif()

# The difference: written only when it changed (its hash is in OUT, so OUT changes with it).
if(EXISTS "${DIFF}")
  file(SHA256 "${DIFF}" old_sha)
  file(SIZE "${DIFF}" old_size)
else()
  set(old_sha "none")
endif()
if(diff_bytes EQUAL 0)
  if(NOT EXISTS "${DIFF}" OR NOT old_size EQUAL 0)
    file(WRITE "${DIFF}" "")
  endif()
elseif(NOT old_sha STREQUAL diff_sha)
  file(WRITE "${DIFF}" "${diff}")
endif()

# C++ string literals: backslashes, quotes and newlines escaped.
function(cxx_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()
list(JOIN modified "\n" modified_text)
cxx_string(c_short "${short}")
cxx_string(c_commit "${commit}")
cxx_string(c_origin "${origin}")
cxx_string(c_sha "${diff_sha}")
cxx_string(c_modified "${modified_text}")
cxx_string(c_version "${VERSION}")
set(content "// Generated by cmake/BuildInfo.cmake at build time.
// extern: a namespace-scope const has internal linkage otherwise (core/system_info.cpp reads them).
namespace bench {
extern const char* const kBuildGitCommit = ${c_short};
extern const char* const kBuildVersion = ${c_version};
extern const char* const kSourceCommit = ${c_commit};
extern const char* const kSourceOrigin = ${c_origin};
extern const char* const kSourceDiffSha256 = ${c_sha};
extern const char* const kSourceModified = ${c_modified};
extern const unsigned long long kSourceDiffBytes = ${diff_bytes}ULL;
}  // namespace bench
// The difference itself, embedded from ${DIFF} (kSourceDiffBytes bytes).
asm(\".section .rodata\\n\"
        \".global myconv_source_diff_begin\\n\"
        \"myconv_source_diff_begin:\\n\"
        \".incbin \\\"${DIFF}\\\"\\n\"
        \".byte 0\\n\"
        \".previous\\n\");
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE "${OUT}" "${content}")
endif()
