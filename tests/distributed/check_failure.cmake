# Runs COMMAND (a list), which must FAIL: exit non-zero within MAX_SECONDS, with output that
# matches the regular expression EXPECT. Prints the output and the time it took.
#   cmake "-DCOMMAND=mpirun;-np;2;prog" "-DEXPECT=regex" -DMAX_SECONDS=30 -P check_failure.cmake
string(TIMESTAMP start "%s")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT ${MAX_SECONDS})
string(TIMESTAMP stop "%s")
math(EXPR took "${stop} - ${start}")
message("---- output (stdout, then stderr) ----\n${out}\n${err}---- exit status: ${rc}, after about ${took} s")
if(rc STREQUAL "0")
  message(FATAL_ERROR "the command succeeded, but it should have failed")
endif()
if(rc MATCHES "timeout|Process terminated")
  message(FATAL_ERROR "the command did not end within ${MAX_SECONDS} s: a silent hang")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not say what failed: expected a match of\n  ${EXPECT}")
endif()
message("ok: failed with status ${rc} after about ${took} s, with the expected message")
