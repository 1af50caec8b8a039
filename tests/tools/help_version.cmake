# TOOL --help prints "usage: NAME ..." and exits 0; TOOL --version prints "NAME VERSION".
foreach(flag --help --version)
  execute_process(COMMAND ${TOOL} ${flag} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NAME} ${flag}: exit status ${rc}, expected 0\n${out}${err}")
  endif()
  if(flag STREQUAL "--help" AND NOT out MATCHES "^usage: ${NAME} ")
    message(FATAL_ERROR "${NAME} --help: expected \"usage: ${NAME} ...\" on stdout, got:\n${out}")
  endif()
  if(flag STREQUAL "--version" AND NOT out STREQUAL "${NAME} ${VERSION}\n")
    message(FATAL_ERROR "${NAME} --version: expected \"${NAME} ${VERSION}\", got \"${out}\"")
  endif()
endforeach()
