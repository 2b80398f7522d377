"""Builds folio's Python extension with the project's CMake tree (in build/, or $FOLIO_BUILD_DIR:
an existing build is reused, so only what changed is compiled) and packages it with the shipped
model, so `import folio; folio.Engine()` works wherever it is installed. pyproject.toml has the
metadata."""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("FOLIO_BUILD_DIR", os.path.join(ROOT, "build"))
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                                   f"-DPython_EXECUTABLE={sys.executable}"], stdout=subprocess.DEVNULL)
        subprocess.check_call(["cmake", "--build", build, "-j", str(os.cpu_count() or 1), "--target", "_folio"])
        built = glob.glob(os.path.join(build, "python", "folio", "_folio*.so"))
        if len(built) != 1:
            sys.exit(f"folio: expected one _folio module in {build}/python/folio, found {built}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)
        model = os.path.join(os.path.dirname(dest), "models", "folio-mini-ocr-3")
        shutil.rmtree(model, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "models", "folio-mini-ocr-3"), model)


setup(
    packages=["folio"],
    package_dir={"": "python"},
    ext_modules=[Extension("folio._folio", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Not CMake's build/: setuptools' own staging goes beside it.
    options={"build": {"build_base": "build/setuptools"}, "egg_info": {"egg_base": "build/setuptools"}},
)
