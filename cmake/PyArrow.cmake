# Imported targets for the Arrow C++ libraries shipped inside the pinned pyarrow wheel.
# The wheel has headers and versioned libraries but no CMake package, so we point imported
# targets at libarrow.so.<major*100+minor> directly. The wheel is located without importing
# pyarrow (importlib.util.find_spec does not run its __init__).
#
# Defines: PYARROW_DIR, PYARROW_VERSION, and targets pyarrow::arrow, pyarrow::parquet,
# pyarrow::arrow_compute, pyarrow::arrow_dataset, pyarrow::arrow_s3, pyarrow::arrow_flight.

execute_process(
  COMMAND "${Python_EXECUTABLE}" -c
    "import importlib.util, importlib.metadata, os; s = importlib.util.find_spec('pyarrow'); print(os.path.dirname(s.origin)); print(importlib.metadata.version('pyarrow'))"
  OUTPUT_VARIABLE _pyarrow_out
  RESULT_VARIABLE _pyarrow_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _pyarrow_rc EQUAL 0)
  message(FATAL_ERROR "pyarrow is not installed for ${Python_EXECUTABLE}; run `make build`")
endif()
string(REPLACE "\n" ";" _pyarrow_out "${_pyarrow_out}")
list(GET _pyarrow_out 0 PYARROW_DIR)
list(GET _pyarrow_out 1 PYARROW_VERSION)
if(NOT PYARROW_VERSION STREQUAL STOKER_PYARROW_VERSION)
  message(FATAL_ERROR "Stoker is built against pyarrow==${STOKER_PYARROW_VERSION}, found "
                      "${PYARROW_VERSION} in ${PYARROW_DIR}")
endif()

string(REPLACE "." ";" _pyarrow_parts "${PYARROW_VERSION}")
list(GET _pyarrow_parts 0 _major)
list(GET _pyarrow_parts 1 _minor)
math(EXPR _so_version "${_major} * 100 + ${_minor}")

function(_stoker_pyarrow_lib target file)
  set(_path "${PYARROW_DIR}/${file}.so.${_so_version}")
  if(NOT EXISTS "${_path}")
    message(FATAL_ERROR "pyarrow wheel lacks ${_path}")
  endif()
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${_path}"
    IMPORTED_NO_SONAME FALSE
    INTERFACE_INCLUDE_DIRECTORIES "${PYARROW_DIR}/include")
endfunction()

_stoker_pyarrow_lib(pyarrow::arrow libarrow)
_stoker_pyarrow_lib(pyarrow::arrow_compute libarrow_compute)
_stoker_pyarrow_lib(pyarrow::parquet libparquet)
_stoker_pyarrow_lib(pyarrow::arrow_dataset libarrow_dataset)
_stoker_pyarrow_lib(pyarrow::arrow_s3 libarrow_s3)
_stoker_pyarrow_lib(pyarrow::arrow_flight libarrow_flight)
set_property(TARGET pyarrow::parquet PROPERTY INTERFACE_LINK_LIBRARIES pyarrow::arrow)
set_property(TARGET pyarrow::arrow_compute PROPERTY INTERFACE_LINK_LIBRARIES pyarrow::arrow)
set_property(TARGET pyarrow::arrow_dataset PROPERTY INTERFACE_LINK_LIBRARIES pyarrow::parquet)
set_property(TARGET pyarrow::arrow_s3 PROPERTY INTERFACE_LINK_LIBRARIES pyarrow::arrow)
set_property(TARGET pyarrow::arrow_flight PROPERTY INTERFACE_LINK_LIBRARIES pyarrow::arrow)
