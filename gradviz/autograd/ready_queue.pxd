# Cython declarations for ready_queue.py when scripts/build_compiled.py compiles it: NodeTask's
# fields (the .py's __slots__) as C-level slots; nothing else changes.
cdef class NodeTask:
    cdef public object _base, _key, fn, inputs, is_shutdown, reentrant_depth, task_id

# ReadyQueue's fields as C-level slots too: push_ready and pop, once a node each, read its lock,
# heap and waiting count from the struct rather than through the instance dict. The __dict__ and
# __weakref__ keep an instance open to other attributes and weak references, as a Python
# class's.
cdef class ReadyQueue:
    cdef public object id, device, name, owner, _lock, _not_empty, _heap, _waiting
    cdef dict __dict__
    cdef object __weakref__
