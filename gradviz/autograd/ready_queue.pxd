# Cython declarations for ready_queue.py when scripts/build_compiled.py compiles it: NodeTask's
# fields (the .py's __slots__) as C-level slots; nothing else changes.
cdef class NodeTask:
    cdef public object _base, _key, fn, inputs, is_shutdown, reentrant_depth, task_id
