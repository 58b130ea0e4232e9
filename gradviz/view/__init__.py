"""Look, don't read: the trace as a page in a browser, a live tensor's graph in one call, and
notebook display.

- ``build_page(trace)`` / ``write_page(trace, path)``: ``gradviz view``'s self-contained HTML
  page (``gradviz.view.page``).
- ``draw(tensor_or_trace)``: torchviz's one call (``gradviz.view.draw``).
- notebook display of a loaded trace and of a recording (``gradviz.view.notebook``).

``import gradviz`` loads only ``gradviz.view.hooks`` (``gradviz.draw``, ``_repr_html_``); this
package imports nothing else, so the viewer's modules load when first used.
"""

