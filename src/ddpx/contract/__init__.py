"""The contract between the core and its plugins: hook specifications, the records plugins
register and receive, the pluggy markers, and the errors shown to users. Plugins see it through
:mod:`ddpx.api`."""
