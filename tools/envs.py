"""The project's environments, made and filled by uv where it can be had, by venv and pip otherwise.

    python3 tools/envs.py venv DIR
    python3 tools/envs.py install DIR REQUIREMENT...

uv: on PATH, else the one in ``.venv-tools`` (``UV_TOOLS``), else uv from PyPI installed there by
this Python's pip; ``INSTALLER=pip`` asks for pip. uv is given pip's own configuration (``pip
config list``: its files and PIP_* variables): indexes, find-links, trusted hosts, constraints,
certificate, proxy, timeout, no-cache-dir. Installs are quiet; a failure prints everything.
``BYTECODE=1`` compiles bytecode at install (pip's default; uv leaves it to the first import).
Standard library only: it runs before any environment exists.
"""

import ast
import os
import shutil
import subprocess
import sys

TOOLS, CHOICE = os.environ.get("UV_TOOLS", ".venv-tools"), os.environ.get("INSTALLER", "auto")


def run(*argv, **env):
    code = subprocess.call(argv, env={**os.environ, **env})
    if code:
        sys.exit(f"failed ({code}): {' '.join(argv)}")


def find_uv():
    """uv on PATH, else the one in .venv-tools, else uv from PyPI into .venv-tools; None if none can be had."""
    if CHOICE == "pip":
        return None
    uv = os.path.join(TOOLS, "bin", "uv")
    if shutil.which("uv") or os.access(uv, os.X_OK):
        return shutil.which("uv") or uv
    # by this Python's pip, else by the pip of a venv there (a Python without pip, or one that refuses)
    # uv is one wheel with no dependencies: nothing to resolve or byte-compile, no pip version to check
    pip = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-compile"]
    tries = [
        [[sys.executable, *pip, "--target", TOOLS, "uv"]],
        [[sys.executable, "-m", "venv", TOOLS], [os.path.join(TOOLS, "bin", "python"), *pip, "uv"]],
    ]
    said = ""
    for steps in tries:
        for argv in steps:
            got = subprocess.run(argv, env={**os.environ, "PIP_USER": "0"}, capture_output=True, text=True)
            said += f"> {' '.join(argv)}\n{got.stdout}{got.stderr}"
            if got.returncode:
                break
        if os.access(uv, os.X_OK):
            with open(os.path.join(TOOLS, ".gitignore"), "w") as ignore:
                ignore.write("*\n")
            return uv
    shutil.rmtree(TOOLS, ignore_errors=True)
    print(f"uv could not be installed from PyPI: pip installs instead\n{said}".rstrip())
    return None


def pip_config():
    """What pip install itself would use: [global], then [install], then PIP_* variables."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    rank, conf = {"global": 0, "install": 1, ":env:": 2}, {}
    for line in listed.stdout.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        name = {"default-timeout": "timeout"}.get(name, name)  # one option, two names
        if section in rank and rank[section] >= conf.get(name, (-1, ""))[0]:
            conf[name] = (rank[section], ast.literal_eval(value))
    return {name: value for name, (_, value) in conf.items()}


def yes(value) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


def uv_options():
    """pip's configuration as uv's options and variables; pip takes the best version across all indexes."""
    conf, argv, env = pip_config(), ["--index-strategy", "unsafe-best-match"], {}
    for key, flag in (
        ("index-url", "--index-url"),
        ("extra-index-url", "--extra-index-url"),
        ("find-links", "--find-links"),
        ("trusted-host", "--allow-insecure-host"),
        ("constraint", "--constraint"),
    ):
        for value in str(conf.get(key, "")).split():
            argv += [flag, value]
    if yes(conf.get("no-index")):
        argv.append("--no-index")
    if yes(conf.get("no-cache-dir")):
        argv.append("--no-cache")
    for key, var in (
        ("cert", "SSL_CERT_FILE"),
        ("client-cert", "SSL_CLIENT_CERT"),
        ("proxy", "HTTP_PROXY"),
        ("proxy", "HTTPS_PROXY"),
        ("timeout", "UV_HTTP_TIMEOUT"),
    ):
        if conf.get(key) and var not in os.environ:
            env[var] = str(conf[key])
    return argv, env


def venv(path):
    uv = find_uv()
    if uv:
        run(uv, "venv", "--quiet", "--allow-existing", "--python", sys.executable, path)
    else:
        run(sys.executable, "-m", "venv", path)
        run(os.path.join(path, "bin", "python"), "-m", "pip", "install", "--quiet", "--upgrade", "pip")


def install(path, *requirements):
    python, uv = os.path.join(path, "bin", "python"), find_uv()
    if uv:  # pip too, for whoever runs the environment's pip
        argv, env = uv_options()
        version = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.strip()
        print(f"installing {' '.join(requirements)} into {path} with {version}: {' '.join(argv)}")
        if os.environ.get("BYTECODE"):  # pip's default; uv's is to leave it to the first import
            argv.append("--compile-bytecode")
        run(uv, "pip", "install", "--quiet", "--python", python, *argv, "pip", *requirements, **env)
    else:
        if subprocess.call([python, "-m", "pip", "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            run(python, "-m", "ensurepip", "--upgrade")
        run(python, "-m", "pip", "install", "--quiet", *requirements)


if __name__ == "__main__":
    {"venv": venv, "install": install}[sys.argv[1]](*sys.argv[2:])
