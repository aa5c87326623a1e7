# `cmake --install` (docs/embedding.md): headers, the libraries (static MLIR
# libraries of the dialect, its passes and lowerings, the compiler; the
# runtime and C API shared libraries), rnn-opt, rnn-compile, the device
# library, and a CMake package: find_package(RNN CONFIG) gives imported
# targets RNN::<library> with their MLIR dependencies.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

# The dialect's libraries are MLIR libraries: add_mlir_library installs each
# into the export set MLIRTargets. The project's other libraries join it, and
# the set is exported under the RNN:: namespace.
set(RNN_MLIR_LIBRARIES RNNDialect RNNTransforms RNNToLinalg
  RNNMatmulToLibraryGemm RNNGPUConversions RNNBufferTransforms RNNCompiler
  RNNRegistration)
set(RNN_SHARED_LIBRARIES rnn_runtime)
foreach(library rnn_runtime_cuda RNNCAPI)
  if(TARGET ${library})
    list(APPEND RNN_SHARED_LIBRARIES ${library})
  endif()
endforeach()
foreach(library ${RNN_MLIR_LIBRARIES} ${RNN_SHARED_LIBRARIES})
  target_include_directories(${library} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
# A sanitized build's libraries need the sanitizer runtime in whatever links
# them: the package says so (RNN_ENABLE_SANITIZERS, CMakeLists.txt).
if(RNN_ENABLE_SANITIZERS)
  foreach(library ${RNN_MLIR_LIBRARIES} ${RNN_SHARED_LIBRARIES})
    target_link_options(${library} INTERFACE ${RNN_SANITIZER_LINK_FLAGS})
  endforeach()
endif()
install(TARGETS ${RNN_SHARED_LIBRARIES} EXPORT MLIRTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Installed binaries find our libraries beside them and MLIR's where MLIR is.
set_target_properties(rnn-opt rnn-compile ${RNN_SHARED_LIBRARIES} PROPERTIES
  INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
install(TARGETS rnn-opt rnn-compile RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET rnn_device_library)
  # rnn-compile --target=cuda finds it beside the runtime, in ../lib.
  install(FILES ${CMAKE_BINARY_DIR}/lib/rnn_device_library.bc
    DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rnn
  ${PROJECT_SOURCE_DIR}/include/rnn-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/rnn
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)

set(RNN_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rnn)
install(EXPORT MLIRTargets NAMESPACE RNN:: FILE RNNTargets.cmake
  DESTINATION ${RNN_INSTALL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/RNNConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/RNNConfig.cmake
  INSTALL_DESTINATION ${RNN_INSTALL_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/RNNConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/RNNConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/RNNConfigVersion.cmake
  DESTINATION ${RNN_INSTALL_CMAKE_DIR})
