# The steps of the install tests (tests/install/CMakeLists.txt), run with cmake -P:
#   STEP=install   cmake --install BUILD_DIR --prefix PREFIX (from scratch), and check the layout
#   STEP=consumer  configure, build and run tests/install/consumer against PREFIX
#   STEP=tool      TOOLS_DIR/recbole_run --model=Pop --dataset=ml-100k from an empty folder
cmake_minimum_required(VERSION 3.18)

function(run_checked what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  ${RUN_OPTIONS})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run_checked("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  foreach(f ${LIBDIR}/cmake/recbole/recboleConfig.cmake
            ${LIBDIR}/cmake/recbole/recboleConfigVersion.cmake
            ${LIBDIR}/cmake/recbole/recboleTargets.cmake include/run/run_recbole.h
            include/recbole/version.h include/models/model.h include/trainer/trainer.h
            bin/recbole_run bin/recbole_data share/recbole/configs/overall.yaml
            share/recbole/datasets/registry.yaml)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "cmake --install did not install ${f} into ${PREFIX}")
    endif()
  endforeach()
  if(DATASETS)
    foreach(suffix inter user item kg link)
      file(SHA256 ${PREFIX}/share/recbole/datasets/ml-100k/ml-100k.${suffix} installed)
      file(SHA256 ${SOURCE_DIR}/datasets/ml-100k/ml-100k.${suffix} shipped)
      if(NOT installed STREQUAL shipped)
        message(FATAL_ERROR "the installed ml-100k.${suffix} differs from the shipped one")
      endif()
    endforeach()
  endif()
  run_checked("installed recbole_run --version" ${PREFIX}/bin/recbole_run --version)
  if(NOT out STREQUAL "recbole_run ${VERSION}\n")
    message(FATAL_ERROR "installed recbole_run --version printed \"${out}\"")
  endif()

elseif(STEP STREQUAL "consumer")
  set(bin ${BUILD_DIR}/install-test/consumer)
  file(REMOVE_RECURSE ${bin})
  set(launcher "")
  if(LAUNCHER)
    set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
  endif()
  run_checked("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
              -B ${bin} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release
              -DCMAKE_PREFIX_PATH=${PREFIX} ${launcher})
  if(NOT out MATCHES "recbole ${VERSION} in ${PREFIX}/${LIBDIR}/cmake/recbole")
    message(FATAL_ERROR "the consumer did not find recbole ${VERSION} in ${PREFIX}:\n${out}")
  endif()
  run_checked("building the consumer" ${CMAKE_COMMAND} --build ${bin})
  # Every model of models/ is registered in a program that names none of them.
  file(GLOB_RECURSE model_sources ${SOURCE_DIR}/models/*.cpp)
  set(n_models 0)
  foreach(src ${model_sources})
    file(STRINGS ${src} lines REGEX "^RECBOLE_REGISTER_MODEL\\(")
    list(LENGTH lines n)
    math(EXPR n_models "${n_models} + ${n}")
  endforeach()
  set(RUN_OPTIONS WORKING_DIRECTORY ${bin})
  # As a user of the package would: data_path=${recbole_DATASETS_DIR}, the installed ml-100k.
  run_checked("running the consumer" ${bin}/consumer ${DATA_PATH} ml-100k)
  if(NOT out MATCHES "models: ${n_models} \\([^)]*Pop" OR NOT out MATCHES "\"test_result\":{\"")
    message(FATAL_ERROR "the consumer should list ${n_models} models and train Pop:\n${out}")
  endif()
  message(STATUS "${out}")

elseif(STEP STREQUAL "tool")
  # TOOLS_DIR/recbole_run with no data_path, from an empty folder, offline (a download would fail
  # at once): it must train on the copy in SHIPPED_DIR.
  set(dir ${BUILD_DIR}/install-test/empty-${NAME})
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  set(RUN_OPTIONS WORKING_DIRECTORY ${dir})
  run_checked("${TOOLS_DIR}/recbole_run" ${TOOLS_DIR}/recbole_run --model=Pop --dataset=ml-100k
              --epochs=1 --show_progress=false --download_retries=0 --download_timeout=1)
  if(NOT out MATCHES "dataset ml-100k: the copy shipped with recbole-cpp in ${SHIPPED_DIR}/ml-100k"
     OR NOT out MATCHES "test result: recall@10" OR EXISTS ${dir}/dataset)
    message(FATAL_ERROR "recbole_run did not train on ${SHIPPED_DIR}/ml-100k:\n${out}")
  endif()
  message(STATUS "${out}")

else()
  message(FATAL_ERROR "STEP: expected install, consumer or tool, got \"${STEP}\"")
endif()
