# Serves the specviz app on port 7860 (the Hugging Face Spaces convention).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860

RUN useradd --create-home --uid 1000 specviz
WORKDIR /home/specviz/app

COPY requirements.txt .
# CPU wheel of torch by default; for a CUDA image, drop the index-url line.
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt

COPY --chown=specviz:specviz app.py README.md ./
COPY --chown=specviz:specviz specviz ./specviz
COPY --chown=specviz:specviz assets ./assets

USER specviz
# The packaged model pair is converted once into this cache on first start.
ENV SPECVIZ_CACHE=/home/specviz/.cache/specviz
EXPOSE 7860
CMD ["python", "app.py"]
