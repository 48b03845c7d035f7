# Serves the specviz app on port 7860 (the Hugging Face Spaces convention).
#   docker build -t specviz . && docker run -p 7860:7860 specviz
# Without a Docker engine or registry, scripts/container_build.sh builds the same file with
# buildah on a Debian base made by debootstrap (docs/spaces.md, "Building the image without Docker").

# Any Debian-like image with python3 (3.10+) and its venv module; the default is the official slim image.
ARG BASE=python:3.11-slim
FROM ${BASE}

# Where torch's CPU wheel comes from: PyPI's own torch is the CUDA build (several GB of nvidia
# wheels), so the CPU index is added; for a CUDA image pass TORCH_INDEX= (empty).
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# More pip options, for a machine that reaches PyPI but not that index, or only through a proxy with
# its own CA: e.g. "--find-links /wheels --cert /run/host-ca.crt", with those paths mounted into the
# build (scripts/container_build.sh does; `docker build` users can leave it empty).
ARG PIP_OPTIONS=
# 1: prepare the packaged model pair while building (the image then starts in seconds); 0: on first start.
ARG PREPARE=1
# 1: install a C++ compiler so that specviz's q4a8 CPU kernels are built (by `prepare`, or on first start): the
# 4-bit target then runs on them; 0: a smaller image that runs PyTorch's own 4-bit kernel instead.
ARG KERNELS=1

# PATH spelled out: an image imported from a debootstrapped folder has no environment of its own.
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860

RUN useradd --create-home --uid 1000 specviz \
 && if [ "$KERNELS" = 1 ] && ! command -v c++ >/dev/null; then \
      apt-get update -qq && apt-get install -y -qq --no-install-recommends g++ >/dev/null \
      && rm -rf /var/lib/apt/lists/*; fi
WORKDIR /home/specviz/app

COPY requirements.txt .
# A virtual environment: Debian's own python3 refuses system-wide pip installs (PEP 668).
# The +cpu wheel ranks above PyPI's torch of the same version, so pip takes it whenever it is offered.
RUN python3 -m venv /opt/venv \
 && pip install ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"} $PIP_OPTIONS -r requirements.txt \
 && python -c "import torch; print('installed torch', torch.__version__)"

COPY --chown=specviz:specviz specviz ./specviz
COPY --chown=specviz:specviz assets ./assets
USER specviz
ENV SPECVIZ_CACHE=/home/specviz/.cache/specviz
# Prepared at build time so that a restarted container (a Space wakes from sleep with an empty
# disk) does not make its first visitor wait for the assembly and the kernels' build; it costs ~1.8 GB of image.
RUN if [ "$PREPARE" = 1 ]; then python -m specviz prepare; fi

COPY --chown=specviz:specviz app.py README.md ./
EXPOSE 7860
CMD ["python", "app.py"]
