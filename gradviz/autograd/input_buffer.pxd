# Cython declarations for input_buffer.py when scripts/build_compiled.py compiles it: InputBuffer's
# two fields as C-level slots (the .py's __slots__); nothing else changes.
cdef class InputBuffer:
    cdef public object buffer, owned
