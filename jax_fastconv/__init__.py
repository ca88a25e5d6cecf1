"""jax_fastconv: fast direct-convolution kernels for JAX (Chang, Onishi, Maruyama, "Fast
convolution kernels on Pascal GPU with high memory efficiency"), as a drop-in
`jax.lax.conv_general_dilated`."""
from .api import Explanation, conv_general_dilated, explain, plan

__version__ = "0.1.0"
__all__ = ["conv_general_dilated", "explain", "plan", "Explanation", "__version__"]
