"""Loading plugins (entry points, ``DDPX_PLUGINS``, in-process) and collecting what they register."""
