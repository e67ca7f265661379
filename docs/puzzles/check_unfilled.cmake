# cmake -DPROGRAM=puzzles -DPUZZLE=NN -DSOURCE=NN_name.cu -DEXPECT=regex -P check_unfilled.cmake
# A puzzle as shipped must fail: runs `puzzles NN` and requires a non-zero exit and EXPECT in its
# output. A puzzle file without its "// FILL IN" was solved by the reader: the test skips.
file(READ "${SOURCE}" text)
if(NOT text MATCHES "// FILL IN")
  message("SKIPPED: ${SOURCE} has no FILL IN left (solved in this checkout)")
  return()
endif()
execute_process(COMMAND "${PROGRAM}" "${PUZZLE}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "`puzzles ${PUZZLE}` passed with its FILL IN body: the puzzle checks nothing")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "`puzzles ${PUZZLE}` failed (exit ${rc}), but its output lacks: ${EXPECT}")
endif()
