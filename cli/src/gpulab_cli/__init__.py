"""gpulab: the GPU Lab Portal's command-line client, on the portal's public REST API only."""

__version__ = "0.1.0"
