"""Where models come from and at what precision: loading a pair (`loading`), Hub ids and local folders (`sources`),
the packaged GGUF pair (`packaged`), devices and memory, and every quantized linear type (`quant`)."""
