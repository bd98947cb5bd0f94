"""Package layout only; everything else is in pyproject.toml.

The Hydra configs live in the repository's top-level ``conf/`` (the single source) and are shipped inside the
package as ``multimsd/conf`` (``package_dir`` maps one onto the other), so an installed wheel composes the same
configs as a checkout. Every config directory is listed as a (namespace) package, so setuptools ships its YAML
as package data without warnings.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["multimsd*", "hydra_plugins*"]),
        "multimsd.conf",
        *(f"multimsd.conf.{p}" for p in find_namespace_packages(where="conf")),
    ],
    package_dir={"multimsd.conf": "conf"},
)
