"""Watch a running engine: its acceptance and load, read from its Prometheus metrics window by window, held against
the serving model's break-even at that load, with a change-point test for drops in acceptance.

:mod:`.windows` turns reads of a page (or of a Prometheus server) into windows of counts; :mod:`.judge` puts each
window's acceptance and load through the serving model; :mod:`.drift` is the change-point test; :mod:`.sources` reads
an engine's page or a Prometheus server (GET only); :mod:`.publish` serves specsim's own gauges and writes alerting
rules and a Grafana dashboard; :mod:`.replay` writes a simulated engine's pages, in each engine's format, for tests and
for trying it all without an engine.
"""
