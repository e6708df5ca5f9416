# EP module helpers: ONYX_EP_<NAME>=ON|OFF|AUTO (AUTO: build when the dependency is found), and
# onyx_add_ep_module() to build libonyx_ep_<name>.so beside libonyx and install it with it.

function(onyx_ep_option name default doc)
  set(ONYX_EP_${name} ${default} CACHE STRING "${doc} (ON, OFF or AUTO)")
  set_property(CACHE ONYX_EP_${name} PROPERTY STRINGS ON OFF AUTO)
endfunction()

# An optional module (an EP, the image codecs) whose dependency is missing: a configure error when
# its ON|OFF|AUTO option is ON, else a status line saying what is not built. The caller returns.
function(onyx_module_missing option module what)
  if(${option} STREQUAL "ON")
    message(FATAL_ERROR "${option}=ON but ${what}")
  endif()
  message(STATUS "${module} not built: ${what}")
endfunction()

# onyx_add_ep_module(<name> SOURCES ... [LINK ...] [INCLUDE ...])
function(onyx_add_ep_module name)
  cmake_parse_arguments(EP "" "" "SOURCES;LINK;INCLUDE" ${ARGN})
  set(target onyx_ep_${name})
  add_library(${target} MODULE ${EP_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "lib" OUTPUT_NAME "onyx_ep_${name}"
                                             LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src ${EP_INCLUDE})
  target_link_libraries(${target} PRIVATE onyx onyx_flags ${EP_LINK})
  install(TARGETS ${target} LIBRARY DESTINATION ${ONYX_MODULE_INSTALL_DIR})
  set_property(GLOBAL APPEND PROPERTY ONYX_BUILT_EPS ${name})
  add_dependencies(onyx_all_eps ${target})
endfunction()

# onyx_add_ep_plugin(<name> SOURCES ... [LINK ...] [INCLUDE ...]): an EP built in onyx's tree as a
# plugin of the C ABI (include/onyx/ep_c_api.h, docs/ep-sdk.md), as a vendor builds one outside it:
# libonyx_ep_<name>.so beside libonyx and installed with it, seeing onyx's public headers only and
# linking nothing of onyx (onyx_flags brings the project's compile flags and nothing else), its
# symbols hidden but for the entry point onyx_ep_plugin_init.
function(onyx_add_ep_plugin name)
  cmake_parse_arguments(EP "" "" "SOURCES;LINK;INCLUDE" ${ARGN})
  set(target onyx_ep_${name})
  add_library(${target} MODULE ${EP_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "lib" OUTPUT_NAME "onyx_ep_${name}"
                                             LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin
                                             C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden
                                             VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/include ${EP_INCLUDE})
  target_link_libraries(${target} PRIVATE onyx_flags ${EP_LINK})
  install(TARGETS ${target} LIBRARY DESTINATION ${ONYX_MODULE_INSTALL_DIR})
  set_property(GLOBAL APPEND PROPERTY ONYX_BUILT_EPS ${name})
  add_dependencies(onyx_all_eps ${target})
endfunction()
