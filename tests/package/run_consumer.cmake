# run_consumer.cmake — the body of ctest package_consumer (see CMakeLists.txt here).
# cmake -DBUILD_DIR=... -DWORK_DIR=... -DCONSUMER_DIR=... -DCXX_COMPILER=... -P run_consumer.cmake
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package_consumer: ${what} failed (${rc})")
  endif()
endfunction()

step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f lib/cmake/nvfp4_dual/nvfp4_dualConfig.cmake lib/cmake/nvfp4_dual/nvfp4_dualConfigVersion.cmake
          include/nvfp4_dual/reference.hpp include/nvfp4_dual/check_report.hpp
          lib/libnvfp4_reference.a lib/libnvfp4_check.a bin/harness)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "package_consumer: the install lacks ${f}")
  endif()
endforeach()
# The library writes its JSON with nlohmann/json, which a consumer need not have: no installed header
# includes it, and the harness's own header that does (check_json.hpp) is not installed.
file(GLOB headers ${prefix}/include/nvfp4_dual/*.hpp)
foreach(h ${headers})
  file(READ ${h} text)
  if(text MATCHES "#include[ \t]*[<\"]nlohmann/" OR h MATCHES "/check_json\\.hpp$")
    message(FATAL_ERROR "package_consumer: the installed ${h} needs nlohmann/json")
  endif()
endforeach()
# The installed harness finds its backend modules beside it (<libdir>/nvfp4_dual/paths) and runs.
step("run the installed harness" ${prefix}/bin/harness --backend cpu --verify plain,fused --shape 7x13x48)
step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix})
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step("run the consumer" ${WORK_DIR}/build/consumer)
