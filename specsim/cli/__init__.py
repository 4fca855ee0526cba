"""The ``specsim`` command: one module per command group, each declaring its flags beside its handler."""
