"""Español: la misma tabla que en.py, clave por clave, con los mismos `{marcadores}`.

La notación (p, q, a, u, K, τ, α) se queda como en docs/design.md. "Draft" se
traduce como **borrador** y "target" como **objetivo**; "token" se queda.
`tests/test_strings.py` falla si falta una clave o un marcador.
"""

STRINGS: dict[str, str] = {
    # ------------------------------------------------------------ procedencia (leyenda, veredictos)
    "legend.accepted": "token del borrador aceptado: el borrador lo propuso y el objetivo estuvo de acuerdo (u < a)",
    "legend.rejected": "token del borrador rechazado: u ≥ a, así que el objetivo lo sustituyó; se muestra tachado",
    "legend.discarded": "token del borrador descartado: propuesto después de un rechazo, nunca se usa",
    "legend.correction": "corrección: extraída del residuo max(0, p − q) tras un rechazo",
    "legend.bonus": ("extra: se aceptaron todos los borradores, así que la distribución p del objetivo para el "
                     "siguiente token da uno más"),
    "legend.sample": "token",
    "legend.rule": ("En cada ronda el modelo pequeño (**borrador**) propone K tokens (probabilidades **q**); el "
                    "modelo grande (**objetivo**) los comprueba todos en una sola pasada (probabilidades **p**). Un "
                    "token x del borrador se queda cuando un número aleatorio **u** está por debajo de "
                    "**a = min(1, p(x)/q(x))**. Pasa el ratón sobre cualquier token para ver sus números."),
    "legend.greedy": ("**Modo voraz** (temperatura 0): un token del borrador se queda si y solo si es la primera "
                      "opción del objetivo; los porcentajes de *confianza* son solo informativos."),
    "verdict.accepted": "aceptado",
    "verdict.rejected": "rechazado",
    "verdict.discarded": "descartado",

    # ------------------------------------------------------------ textos emergentes del texto en vivo
    "live.prompt_title": "tu prompt (el modelo también ve la plantilla de chat)",
    "hover.draft_head": "{verdict} · token del borrador {token} · ronda {round}, posición {pos} de {k}",
    "hover.discarded": "propuesto después del rechazo en la posición {pos}: nunca se usa",
    "hover.q": "q(x) = {q}   probabilidad del borrador",
    "hover.p": "p(x) = {p}   probabilidad del objetivo",
    "hover.accepted": "u < a  →  aceptado",
    "hover.rejected": "u ≥ a  →  rechazado: la corrección se extrae de max(0, p − q)",
    "hover.greedy_rule": ("voraz (temperatura 0): p y q son one-hot, así que el token se acepta si y solo si es "
                          "el primero del objetivo"),
    "hover.greedy_confidence": "confianza (softmax sin temperatura, solo informativa): borrador {q}, objetivo {p}",
    "hover.target_top": "primer token del objetivo: {token}",
    "hover.target_top5": "top-5 de p del objetivo: {alts}",
    "hover.target_top5_conf": "top-5 del objetivo (confianza): {alts}",
    "hover.draft_top5": "top-5 de q del borrador: {alts}",
    "hover.draft_top5_conf": "top-5 del borrador (confianza): {alts}",
    "hover.correction_head": ("CORRECCIÓN · {token} · ronda {round}, posición {pos}\n"
                              "el token del borrador en la posición {pos} fue rechazado; este se extrae del residuo "
                              "r(x) = max(0, p − q) / Σ"),
    "hover.correction_greedy": "voraz: el residuo es one-hot en el primer token del objetivo",
    "hover.residual_top5": "top-5 del residuo: {alts}",
    "hover.bonus_head": ("EXTRA · {token} · ronda {round}, posición {pos}\n"
                         "se aceptó todo lo propuesto ({k:borrador|borradores}), así que la distribución del objetivo en la posición "
                         "{pos} (ya calculada en la misma pasada) da un token más"),

    # ------------------------------------------------------------ tarjetas de ronda y registro
    "card.title": "Ronda {round}",
    "card.counts": "propuestos {k} · aceptados {accepted} · emitidos {emitted}",
    "card.time": "borrador {draft} ms · verificación {verify} ms",
    "card.token": "token del borrador",
    "card.q": "q(x) borrador",
    "card.p": "p(x) objetivo",
    "card.q_conf": "confianza del borrador",
    "card.p_conf": "confianza del objetivo",
    "card.accept": "a = min(1, p/q), u marcado",
    "card.verdict": "veredicto",
    "card.not_checked": "sin comprobar",
    "card.correction": ("**corrección** en la posición {pos}, extraída del residuo max(0, p − q) "
                        "(r = {r}). Top-5 del residuo:"),
    "card.bonus": "**extra** en la posición {pos}: todos aceptados, un token más de p (p = {p}). Top-5 de p:",
    "card.bonus_conf": ("**extra** en la posición {pos}: todos aceptados, un token más de p (p = {p}). "
                        "Top-5 de confianza del objetivo:"),
    "card.eos": "se alcanzó el fin de secuencia",
    "card.no_draft": "sin borrador en esta ronda (el presupuesto solo dejaba sitio para un token)",
    "log.empty": "Aquí aparecen las tarjetas de ronda, la más reciente primero.",
    "log.truncated": "Se muestran las {limit} rondas más recientes de un total de {n:ronda|rondas}; el inspector de rondas llega a todas.",

    # ------------------------------------------------------------ métricas
    "tile.tps": "tokens / s (especulativo)",
    "tile.tps_hint": ("tokens emitidos / tiempo de las rondas de decodificación (borrador y verificación); sin la "
                      "lectura del prompt"),
    "tile.acceptance": "tasa de aceptación α̂",
    "tile.acceptance_hint": "tokens del borrador aceptados / tokens propuestos",
    "tile.tau": "longitud media aceptada τ",
    "tile.tau_hint": ("tokens emitidos por ronda (borradores aceptados + corrección o extra); la decodificación "
                      "normal tiene τ = 1"),
    "tile.rounds": "rondas",
    "tile.rounds_hint": "rondas de borrador/verificación hasta ahora",
    "tile.tokens": "tokens",
    "tile.tokens_hint": "tokens emitidos hasta ahora",
    "tile.split": "tiempo borrador / verificación",
    "tile.split_hint": ("parte del bucle de decodificación en el modelo borrador frente a la verificación del "
                        "objetivo"),
    "tile.speedup": "aceleración frente al objetivo solo",
    "tile.speedup_hint": "tokens/s especulativos sobre el objetivo decodificando solo, mismo prompt y ajustes",
    "tile.prefill": "prellenado del prompt {seconds} s (no cuenta en tokens/s)",

    # ------------------------------------------------------------ comparación con el objetivo solo
    "compare.speedup": "{speedup}× de aceleración",
    "compare.rates": ("especulativo {spec} tok/s frente a objetivo solo {base} tok/s (ejecutado después, nunca a "
                      "la vez)"),
    "compare.counts": ("Las dos velocidades cuentan solo la decodificación: los tokens que emitió cada ejecución "
                       "entre el tiempo de sus propios pasos de decodificación; la lectura del prompt (y la "
                       "compilación, si la hubo) queda fuera, como la deja fuera `python -m specviz bench`. La "
                       "página se dibujó igual durante las dos ejecuciones."),
    "compare.weights": ("Las dos ejecuciones usaron el mismo objetivo, con sus pesos guardados como {weights}: la "
                        "forma más rápida en que esta app lo ejecuta en esta máquina (medida al cargar los modelos)."),
    "compare.identical": ("✓ salida idéntica: la decodificación especulativa voraz produjo exactamente los "
                          "tokens del propio objetivo ({n:token|tokens})"),
    "compare.differ": "≠ las salidas difieren {where} ({why})",
    "compare.at_token": "en el token {n}",
    "compare.in_length": "en longitud",
    "compare.why_dense": ("este objetivo multiplica por pesos densos {weights}, y esos productos de matrices "
                          "calculan una fila de otra forma cuando se multiplican varias a la vez, así que un casi "
                          "empate entre los dos primeros tokens puede invertirse; los pesos int4 e int8 que la app "
                          "elige en una CPU se calculan fila a fila y dan una salida idéntica"),
    "compare.why_attention": ("la implementación de atención de este modelo no es la de fila a fila que specviz "
                              "comprueba, así que una fila de verificación puede redondear distinto que un paso de "
                              "un token cerca de un empate"),
    "compare.why_gpu": ("en una GPU los productos de matrices y los núcleos de atención calculan una fila de otra "
                        "forma cuando se leen varias a la vez, así que un casi empate puede invertirse; la salida "
                        "idéntica bit a bit está garantizada en CPU"),
    "compare.why_compiled": ("las pasadas compiladas fusionan operaciones de otra forma para una fila que para "
                             "varias, así que un casi empate puede invertirse; la salida idéntica bit a bit está "
                             "garantizada en pasadas de CPU sin compilar"),
    "compare.why_unexpected": ("esta configuración calcula cada fila de verificación exactamente como un paso de un "
                               "token, así que esto no debería ocurrir: infórmalo con la traza descargada"),
    "compare.sampling": ("Modo muestreo: las salidas son extracciones aleatorias distintas de la misma "
                         "distribución, así que no se espera que coincidan token a token."),
    "replay.summary": "borrador **{draft}** → objetivo **{target}** · K = {k} · {sampling}",

    # ------------------------------------------------------------ gráficos
    "chart.inspector": "Inspector de rondas",
    "chart.inspector_empty": "Genera o reproduce para inspeccionar una ronda",
    "chart.inspector_nothing": "no hay nada registrado en esta ronda",
    "chart.confidence": "confianza (softmax sin temperatura)",
    "chart.probability": "probabilidad",
    "chart.q_series": "q(x) borrador {what}",
    "chart.p_series": "p(x) objetivo {what}",
    "chart.residual_series": "residuo max(0, p − q), normalizado",
    "chart.residual_outside": "residuo (tokens fuera de ambos top-5)",
    "chart.drafted_mark": "◀ propuesto",
    "chart.bonus_mark": "◀ extra",
    "chart.inspector_position": "Ronda {round}, posición {pos}: {verdict}",
    "chart.inspector_sub": "propuesto {token}: q = {q}, p = {p}, a = min(1, p/q) = {a}, u = {u} → {verdict}",
    "chart.inspector_sub_correction": "; corrección {token}",
    "chart.inspector_bonus": "Ronda {round}, posición {pos}: token extra",
    "chart.inspector_bonus_sub": "se aceptó todo lo propuesto ({k:borrador|borradores}); extra {token} extraído de p (p = {p})",
    "chart.inspector_greedy": " · voraz: las barras son confianza; aceptación = mismo primer token",
    "chart.inspector_x": "token (mejores candidatos)",
    "chart.acceptance": "Aceptación por posición del borrador",
    "chart.acceptance_sub": "la posición i solo se alcanza cuando se aceptaron 1..i−1",
    "chart.no_rounds": "aún no hay rondas",
    "chart.accepted_share": "fracción aceptada",
    "chart.acceptance_hover": "posición {pos}: {share}",
    "chart.acceptance_hover_counts": "posición {pos}: {share} de {n:ronda|rondas}",
    "chart.acceptance_x": "posición i en el borrador",
    "chart.acceptance_y": "aceptado",
    "chart.timeline": "Tiempo por ronda: borrador frente a verificación",
    "chart.draft_series": "borrador (K pasos del modelo pequeño)",
    "chart.verify_series": "verificación (1 pasada del objetivo)",
    "chart.emitted_series": "tokens emitidos",
    "chart.draft_hover": "ronda {round}: borrador {ms} ms",
    "chart.verify_hover": "ronda {round}: verificación {ms} ms",
    "chart.timeline_x": "ronda",
    "chart.timeline_y2": "tokens",
    "law.title": "Borradores aceptados por ronda, frente a la ley",
    "law.none": "aún ninguna ronda ha propuesto borradores",
    "law.observed_series": "rondas, medidas",
    "law.observed_hover": "{j} aceptados: {share} de las rondas ({n})",
    "law.chain_series": "aceptaciones independientes con α = {alpha}",
    "law.tree_series": "una misma tasa en cada profundidad, {alpha}",
    "law.measured_series": "tasa medida por profundidad (de estas rondas)",
    "law.law_hover": "{j} aceptados: rondas que espera la ley: {n}",
    "law.measured_hover": "{j} aceptados: rondas que espera la ley medida por profundidad: {n}",
    "law.x": "borradores aceptados en la ronda",
    "law.y": "rondas",
    "law.convention": "Se cuentan los borradores aceptados (de 0 a K). Cada ronda añade luego un token del objetivo (la corrección, o el bonus tras K de K), así que tokens por ronda = aceptados + 1. α = aceptados / (aceptados + rechazados).",
    "law.tree_note": "La ley medida por profundidad de un árbol coincide con las barras por construcción; la prueba es frente a una misma tasa en cada profundidad.",
    "law.skipped": "Se dejan fuera {n:ronda|rondas} sin borradores.",
    "law.certain": "α = {alpha}: la ley pone todas las rondas en una sola longitud, así que no hay nada que probar; las barras muestran si las rondas coinciden.",
    "law.too_few": "{rounds:ronda es|rondas son} demasiado pocas para probar la ley (cada grupo de longitudes necesita unas {least:ronda esperada|rondas esperadas}, y la prueba al menos tres grupos); distancia de variación total {tv}: lee las barras como un esbozo.",
    "law.fits": "La ley encaja (χ² p = {p}, distancia de variación total {tv}): estas rondas parecen aceptaciones independientes con α = {alpha}.",
    "law.breaks_runs": "La ley no encaja (χ² p = {p}, distancia de variación total {tv}): {ends:ronda aceptó|rondas aceptaron} todos o ninguno de sus borradores, donde aceptaciones independientes dan unas {expected}. La aceptación llega en rachas: un tramo repetido se acepta entero, el texto nuevo se rechaza pronto.",
    "law.breaks_position": "La ley no encaja (χ² p = {p}, distancia de variación total {tv}): {ends:ronda aceptó|rondas aceptaron} todos o ninguno de sus borradores, donde aceptaciones independientes dan unas {expected}. La aceptación cambia con la posición en el borrador: mira la aceptación por posición.",
    "rtime.title": "A dónde va el tiempo de cada ronda, frente al objetivo solo",
    "rtime.draft_series": "borrador",
    "rtime.verify_series": "la verificación (1 pasada del objetivo)",
    "rtime.rest_series": "el resto (la contabilidad de las cachés, registrar la ronda)",
    "rtime.part_hover": "ronda {round}: {part} {ms} ms",
    "rtime.target_series": "objetivo solo, mismos tokens",
    "rtime.target_hover": "ronda {round}: el objetivo solo tarda {ms} ms en los tokens de la ronda ({n})",
    "rtime.shares": "Borrador {draft}, la verificación {verify}, el resto {rest} del tiempo de las rondas.",
    "rtime.shares_two": "Borrador {draft}, la verificación {verify} del tiempo de las rondas (esta traza no registra el tiempo completo de ninguna ronda, así que no se muestra el resto).",
    "rtime.no_reference": "Esta ejecución no tiene tiempo del objetivo solo, así que no hay marcas: vienen de «Ejecutar después también el objetivo solo» cuando esa ejecución termina.",
    "rtime.slower": "{slower} de {rounds:ronda|rondas} costaron más de lo que el objetivo solo tardaría en los mismos tokens.",
    "rtime.caption": "Una barra por encima de su marca es una ronda más lenta que el objetivo solo para sus tokens; sus tramos dicen por qué.",
    "rtime.newest": "Se dibujan las más recientes de {total:ronda|rondas}: {shown}.",
    "rtime.untimed": "No se registró el tiempo de ninguna ronda.",
    "chart.sweep": "Rendimiento según K",
    "chart.sweep_empty": "ejecuta un barrido para llenar este gráfico",
    "chart.measured_series": "tokens/s medidos (especulativo)",
    "chart.measured_hover": "K={k}: {tps} tok/s\naceptación {acceptance}, τ {tau}, aceleración {speedup}×",
    "chart.target_alone": "objetivo solo",
    "chart.target_alone_hover": "objetivo solo: {tps} tok/s",
    "chart.theory_series": "teoría con α y c medidos",
    "chart.theory_hover": "K={k}: teoría {tps} tok/s",
    "chart.acceptance_series": "tasa de aceptación α̂",
    "chart.acceptance_k_hover": "K={k}: aceptación {acceptance}",
    "chart.best_k": "mejor K = {k}",
    "chart.sweep_sub": "α medio medido = {alpha}, razón de coste c = {c}",
    "chart.sweep_x": "K (tokens del borrador por ronda)",
    "chart.sweep_y": "tokens / s",
    "chart.sweep_y2": "tasa de aceptación",

    # ------------------------------------------------------------ la página
    "app.title": "specviz · la decodificación especulativa, visualizada",
    "app.intro": ("# specviz · mira la decodificación especulativa\n"
                  "Un modelo pequeño (**borrador**) adivina los K siguientes tokens; el modelo grande (**objetivo**) "
                  "comprueba las K conjeturas en **una** sola pasada\ny se queda con las que comparte. Misma "
                  "distribución de salida que el objetivo solo, normalmente más rápido.\nPulsa **Generar** y pasa "
                  "el ratón sobre cualquier token para ver por qué se quedó o se sustituyó."),
    "example.prompt": "Escribe una función de Python que compruebe si un número es primo.",
    "example.label": "Número primo",
    "ui.prompt": "Instrucción",
    "ui.raw": "Texto sin procesar (sin plantilla de chat)",
    "ui.k": "K: tokens del borrador por ronda",
    "ui.adaptive": ("K adaptativo: deja de proponer en una ronda cuando la confianza del borrador baja de "
                    "{threshold} (K pasa a ser un máximo)"),
    "ui.max_new": "Máximo de tokens nuevos",
    "ui.sampling": "Muestreo",
    "ui.temperature": "Temperatura (0 = voraz)",
    "ui.top_p": "top-p (1 = desactivado)",
    "ui.top_k": "top-k (0 = desactivado)",
    "ui.seed": "Semilla",
    "ui.models": "Modelos",
    "ui.pair": "Par borrador → objetivo",
    "ui.draft_id": "Modelo borrador (id del Hub)",
    "ui.target_id": "Modelo objetivo (id del Hub)",
    "ui.models_note": "Ambos modelos deben compartir tokenizador. Los ids del Hub necesitan internet en el servidor.",
    "ui.compare": "Ejecutar después también el objetivo solo (aceleración, comprobación de salida idéntica)",
    "ui.generate": "Generar",
    "ui.stop": "Detener",
    "ui.examples": "Ejemplos (haz clic para rellenar)",
    "ui.insp_round": "Ronda",
    "ui.insp_pos": "Posición (K+1 = extra)",
    "ui.k_lo": "K más pequeño",
    "ui.k_hi": "K más grande",
    "ui.sweep_tokens": "Tokens por ejecución",
    "ui.sweep_run": "Ejecutar el barrido",
    "ui.download": "Descargar traza (JSON)",
    "ui.upload": "Reproducir una traza (.json)",
    "ui.replay": "Reproducir de nuevo",
    "tab.log": "Rondas",
    "tab.inspector": "Inspector",
    "tab.charts": "Aceptación y tiempos",
    "tab.sweep": "Rendimiento según K",
    "tab.trace": "Archivos de traza",
    "pair.packaged": "Qwen2.5-Coder 0.5B → 1.5B (incluido, funciona sin conexión)",
    "pair.gguf": "{draft} → {target} ({size} GB, archivos GGUF de este servidor)",
    "pair.hub_preset": "{name} (Hub)",
    "pair.custom": "Ids del Hub personalizados…",

    # ------------------------------------------------------------ mensajes de estado de una ejecución
    "status.ready": "Listo. Pulsa Generar.",
    "status.loading": "Cargando modelos (el primer arranque puede tardar uno o dos minutos)… {seconds} s",
    "status.prepare_failed": "No se pudo preparar la ejecución: {error}",
    "status.round": "Ronda {n} · {tokens} / {total:token|tokens}",
    "status.baseline_start": ("Ejecución especulativa terminada. Ahora se ejecuta el objetivo solo para comparar "
                              "(después, nunca a la vez)…"),
    "status.baseline_progress": "Objetivo solo: {n} / {total:token|tokens}…",
    "status.failed": "La ejecución se detuvo con un error: {error}",
    "status.stopped": "Detenido antes de decodificar nada.",
    "status.stopped_after": ("Detenido tras {rounds:ronda|rondas} ({tokens:token|tokens}). Lo generado se conserva: descarga o "
                             "reproduce su traza en Archivos de traza."),
    "status.done": ("Hecho: {tokens:token|tokens} en {rounds:ronda|rondas}, {tps} tokens/s, aceptación {acceptance}, "
                    "τ = {tau}."),

    # ------------------------------------------------------------ comprobación de entradas
    "field.k": "K",
    "field.lookup_k": "K de búsqueda",
    "field.max_new": "Máximo de tokens nuevos",
    "field.seed": "Semilla",
    "field.top_k": "Top-k",
    "field.k_lo": "K más pequeño",
    "field.k_hi": "K más grande",
    "field.sweep_tokens": "Tokens por ejecución",
    "input.not_a_number": "{name} debe ser un número entre {lo} y {hi}.",
    "input.not_whole": "{name} debe ser un número entero entre {lo} y {hi}.",
    "input.custom_pair": ("Par personalizado: indica un id del Hub para el borrador y otro para el objetivo, p. ej. "
                          "Qwen/Qwen2.5-0.5B-Instruct y Qwen/Qwen2.5-1.5B-Instruct"),
    "input.no_prompt": "Escribe un prompt.",
    "input.prompt_chars": "El prompt tiene {n:carácter|caracteres}; el límite aquí es {limit}.",
    "input.no_tokens": "El prompt no produce ningún token.",
    "input.prompt_tokens": ("El prompt tiene {n:token|tokens}; con {max_new:token nuevo|tokens nuevos} y K = {k} debe quedarse por "
                            "debajo de {limit:token|tokens} (contexto del modelo {ctx}). Acórtalo o baja el máximo de "
                            "tokens nuevos."),
    "input.trace_size": "el archivo ocupa {mb} MB; el límite es {limit} MB",

    # ------------------------------------------------------------ la pestaña del barrido
    "sweep.intro": ("Ejecuta una vez el objetivo solo y después el decodificador especulativo con cada K, con el "
                    "prompt y los ajustes de muestreo actuales (se ignora EOS para que todas las ejecuciones "
                    "produzcan el mismo número de tokens)."),
    "sweep.failed": "El barrido falló: {error}",
    "sweep.no_result": "Sin resultado.",
    "sweep.best": ("Mejor K = {k}: {tps} tokens/s, {speedup}× el objetivo solo ({base} tokens/s). "
                   "{n:token|tokens} por ejecución, EOS ignorado."),

    # ------------------------------------------------------------ archivos de traza y reproducción
    "trace.intro": ("Descarga la ejecución como JSON; sube una traza para reproducirla ronda a ronda sin cargar "
                    "ningún modelo (prepara las ejecuciones en una GPU y reprodúcelas en cualquier parte). "
                    "**Descargar como HTML** da un único archivo que repite la ejecución o la traza cargada en "
                    "cualquier navegador, sin conexión: sin servidor, sin modelo, sin red."),
    "replay.choose": "Elige un archivo de traza (.json) para reproducir.",
    "replay.unusable": "No es una traza utilizable: {error}",
    "replay.start": "Reproduciendo una traza: {n:ronda|rondas}, sin modelo.",
    "replay.round": "Reproducción: ronda {n} de {total}",
    "replay.done": "Reproducción terminada: {tokens:token|tokens} en {rounds:ronda|rondas} (tiempos tal como se registraron).",
    "replay.recorded_on": "registrada en {device} {dtype}",

    # ------------------------------------------------------------ el aula (paso a paso, laboratorio, qué pasaría si, lecciones)
    "tab.classroom": "Aula",
    "lang.name": "Español",
    "lang.unknown": "El idioma {code!r} no está disponible; se muestra en español. Disponibles: en, es.",
    "cls.intro": ("Recorre rondas reales decisión a decisión, comprueba con miles de muestras que la salida no "
                  "cambia y juega con la teoría. Abre una lección preparada (sin modelo) o usa la ejecución que se "
                  "muestra arriba. Teclas: → siguiente, ← anterior, Espacio reproducir/pausa."),
    "cls.lesson": "Lección preparada",
    "cls.open": "Abrir lección",
    "cls.use_run": "Usar la ejecución mostrada",
    "cls.presenter": "Modo presentación (texto grande)",
    "cls.tab_step": "Paso a paso",
    "cls.tab_lab": "Laboratorio sin pérdidas",
    "cls.tab_whatif": "Calculadora ¿y si…?",
    "cls.prev": "← Anterior",
    "cls.next": "Siguiente →",
    "cls.play": "▶ Iniciar",
    "cls.pause": "⏸ Pausa",
    "cls.speed": "Segundos por decisión",
    "cls.round": "Ronda",
    "cls.go": "Ir",
    "cls.seed": "Semilla de los nuevos u",
    "cls.redraw": "Volver a sortear u",
    "cls.recorded": "Volver al u registrado",
    "cls.predict": "Predecir y luego revelar",
    "cls.guess_accept": "✓ Predigo: aceptar",
    "cls.guess_reject": "✗ Predigo: rechazar",
    "cls.score": "Tus predicciones: {right} de {total} acertadas",
    "cls.predict_right": "acierto",
    "cls.predict_wrong": "fallo",
    "cls.predict_where": ("Las predicciones cuentan en una prueba, antes de mostrar u: activa «Predecir y luego "
                          "revelar» y avanza hasta una prueba."),
    "cls.empty": "Abre una lección o usa la ejecución mostrada para recorrer sus rondas.",
    "cls.where": "Ronda {round} de {rounds} · paso {stop} de {stops}: {kind}",
    "cls.kind_draft": "borrador",
    "cls.kind_verify": "verificación",
    "cls.kind_test": "prueba de aceptación",
    "cls.kind_correction": "corrección",
    "cls.kind_bonus": "extra",
    "cls.state_pending": "aún sin probar",
    "cls.state_correction": "corrección",
    "cls.state_bonus": "extra",
    "cls.draft_text": ("El **borrador** propone {k:token|tokens}, uno tras otro, cada uno extraído de su propia "
                       "distribución **q** (debajo de cada token)."),
    "cls.draft_lookup_text": ("La **búsqueda en el prompt** propone {k:token|tokens}: lo que siguió a los mismos "
                              "últimos tokens antes, en el prompt o en la salida. Nada se extrae al azar, así que "
                              "**q** = 1 para cada uno (debajo de cada token), y la prueba se queda un token con "
                              "probabilidad p."),
    "cls.verify_text": ("El **objetivo** lee {k:token propuesto|tokens propuestos} en **una** sola pasada y obtiene su "
                        "probabilidad **p** en cada posición ({n:posición|posiciones}) (debajo de cada token)."),
    "cls.test_text": ("Prueba del borrador {pos}, {token}: se queda cuando un **u** uniforme cae por debajo de "
                      "**a = min(1, p/q)**."),
    "cls.formula": "a = min(1, p/q) = min(1, {p}/{q}) = {a}; u = {u} {rel} {a} → {verdict}",
    "cls.formula_hidden": "a = min(1, p/q) = min(1, {p}/{q}) = {a}; u = ? → ¿aceptado o rechazado?",
    "cls.greedy_note": ("Ejecución voraz: p y q son one-hot, así que a vale 1 cuando el token del borrador es el "
                        "primero del objetivo y 0 si no; ningún u puede cambiar el veredicto."),
    "cls.ubar_accept": "✓ aceptar",
    "cls.ubar_reject": "✗ rechazar",
    "cls.ubar_label": "barra unidad partida en a = {a}; u = {u}; {verdict}",
    "cls.ubar_label_hidden": "barra unidad partida en a = {a}; u aún oculto",
    "cls.correction_text": ("El borrador {pos} fue rechazado, así que la ronda termina con una **corrección**: "
                            "{token}, extraída del residuo max(0, p − q) normalizado (r = {r})."),
    "cls.correction_greedy": "Voraz: el residuo es one-hot en el primer token del objetivo.",
    "cls.see_mass": "El gráfico de abajo muestra de dónde sale ese residuo.",
    "cls.bonus_text": ("Todo lo propuesto pasó ({k:borrador|borradores}), así que la pasada del objetivo ya contiene p en la posición "
                       "{pos}: el token **extra** {token} se extrae de ella (p = {p}). Esta ronda emite {k} + 1 "
                       "tokens."),
    "cls.sum_accepted": "{n} de {k:borrador aceptado|borradores aceptados}",
    "cls.sum_no_draft": "sin borradores en esta ronda",
    "cls.sum_rejected": "{token} rechazado: p = {p}, q = {q}",
    "cls.sum_correction": "corrección {token} desde el residuo",
    "cls.sum_bonus": "extra {token} desde p",
    "cls.sum_hidden": "El resumen de la ronda aparece cuando terminan sus pruebas.",
    "cls.redrawn": "u sorteado de nuevo (sorteo {draw}, semilla {seed}); p y q son los registrados.",
    "cls.redraw_same": "El punto de rechazo no cambia.",
    "cls.redraw_changed": "El nuevo u mueve el punto de rechazo.",
    "cls.redraw_approx": ("La corrección se extraería del residuo max(0, p − q) en el nuevo punto; solo se "
                          "conocen las listas top-5 registradas, así que la corrección mostrada es aproximada."),
    "cls.redraw_bonus_unknown": ("Ahora pasan todos los borradores: el extra se extraería de p en la posición K+1, "
                                 "que la ejecución registrada nunca necesitó, así que aquí es desconocido."),
    "cls.redraw_greedy": "Voraz: a vale 0 o 1, así que un nuevo u nunca cambia un veredicto.",
    "cls.speed_clamped": "La velocidad {value} está fuera de {lo}…{hi} segundos; se usa el valor permitido más cercano.",
    "cls.mass_title": "Ronda {round}, borrador {pos}: de dónde sale la corrección",
    "cls.mass_empty": "Avanza hasta un rechazo para ver p, q y el residuo",
    "cls.mass_top": "p partida en min(p, q) y max(0, p − q); q marcada",
    "cls.mass_bottom": "el residuo normalizado: la distribución r de la corrección",
    "cls.mass_overlap": "min(p, q): sale como borradores aceptados",
    "cls.mass_residual": "max(0, p − q): el residuo",
    "cls.mass_q": "q (borrador)",
    "cls.mass_p": "p (objetivo)",
    "cls.mass_r": "r = residuo / Σ",
    "cls.mass_drawn": "↻ extraído",
    "cls.mass_why": ("**Por qué p vuelve exactamente:** un token y sale de esta posición o bien como el borrador "
                     "aceptado, con probabilidad min(p, q)(y) (sombreado), o bien como la corrección: la "
                     "probabilidad de rechazo 1 − Σ min(p, q) ≈ {reject} por r(y). Juntos: "
                     "min(p, q) + max(0, p − q) = p."),
    "cls.mass_example": ("Para {token}: min(p, q) = {overlap}, más {reject} × r = {reject} × {r} = {resid}; "
                         "juntos p = {p}."),
    "cls.mass_exact": "r es el residuo del propio decodificador (top-5); p y q sobre las listas top-5 registradas.",
    "cls.mass_approx": ("Aproximado: construido solo con las listas top-5 registradas; faltan los tokens fuera de "
                        "ellas, así que el residuo mostrado no es el completo."),
    "cls.lesson_choose": "Elige primero una lección.",
    "cls.lesson_opened": "{title}: {description}",
    "cls.lesson_unknown": "No hay ninguna lección llamada {name!r}.",
    "cls.lesson_missing": "El archivo de lección {name} falta o no se puede leer.",
    "cls.lesson_too_big": "El archivo de lección {name} es demasiado grande.",
    "cls.lesson_index_bad": "El índice de lecciones está mal formado ({error}).",
    "cls.lesson_bad": "La lección {name!r} no es una traza utilizable: {error}",
    "cls.no_run": "Aún no hay ejecución: pulsa Generar (o reproduce una traza) primero, o abre una lección.",
    "cls.run_opened": "Recorriendo la ejecución mostrada: {n:ronda|rondas}.",

    "cls.tab_race": "Carrera de borradores",
    "cls.tab_run": "La ejecución entera: longitudes aceptadas y tiempo",
    "cls.run_intro": "Tras la última ronda, la ejecución entera: cuántos borradores aceptó cada ronda frente a lo que predicen aceptaciones independientes, y a dónde fue el tiempo de cada ronda.",
    "race.intro": ("**El mismo prompt, cuatro borradores.** Primero corre el objetivo solo; después el modelo "
                   "borrador, la búsqueda en el prompt, el híbrido y un árbol de borradores decodifican el mismo "
                   "prompt con la misma K, en modo voraz (T = 0), cada uno como lo ejecuta Generar, y el objetivo "
                   "solo es la misma comparación de Generar, así que las aceleraciones son las que muestra Generar. La "
                   "decodificación especulativa voraz debe escribir exactamente los tokens del objetivo, así que la "
                   "carrera es también una prueba de que no hay pérdidas. Cada token se colorea según quién lo "
                   "propuso."),
    "race.prompt": "Instrucción",
    "race.default_prompt": ("Cambia el nombre de la variable total a running_sum en esta función y devuelve la "
                            "función entera.\n\n```python\ndef mean(values):\n    total = 0\n    count = 0\n"
                            "    for v in values:\n        total += v\n        count += 1\n    if count == 0:\n"
                            "        return 0.0\n    return total / count\n```"),
    "race.tokens": "Tokens por borrador",
    "race.k": "K (tokens de borrador por ronda; nodos del árbol)",
    "race.run": "Empezar la carrera",
    "race.stop": "Detener la carrera",
    "race.target": "objetivo solo",
    "race.running": "Corre {lane} ({i} de {n}), {seconds} s…",
    "race.loading": "Cargando el par de modelos para la carrera…",
    "race.stopping": "Deteniendo la carrera tras la ronda en curso…",
    "race.stopped": "Carrera detenida: se muestran los borradores que terminaron; el resto no corrió.",
    "race.failed": "La carrera se detuvo con un error: {error}",
    "race.done_same": "Terminado: todos los borradores escribieron exactamente los {n:token|tokens} del objetivo solo.",
    "race.done_differs": ("Terminado, pero {lanes} no escribieron los tokens del objetivo solo. La decodificación "
                          "especulativa voraz es exacta solo hasta el redondeo en coma flotante de las pasadas: un "
                          "casi empate puede inclinarse."),
    "race.col_drafter": "borrador",
    "race.col_tau": "τ (tokens por ronda)",
    "race.col_accept": "aceptación",
    "race.col_tps": "tokens/s",
    "race.col_speedup": "frente al objetivo solo",
    "race.col_lookup": "de la búsqueda en el prompt",
    "race.col_same": "mismo texto que el objetivo solo",
    "race.same": "sí",
    "race.differs": "no: difiere desde el token {n}",
    "race.reference": "(la referencia)",
    "race.legend": "Quién propuso cada token:",
    "race.src_model": "el modelo borrador (aceptado)",
    "race.src_ngram": "la búsqueda en el prompt (aceptado)",
    "race.src_target": "el propio objetivo (corrección o token extra, o el objetivo solo)",
    "race.tip": "token {i}: {source}",
    "race.figures_note": ("τ cuenta tokens por pasada del objetivo; la aceptación es aceptados / propuestos; "
                          "tokens/s es solo la decodificación (leer el prompt cuesta lo mismo en cada carril y no se "
                          "cuenta). Medido una vez, en esta máquina, que otros pueden estar usando."),
    "race.lesson_note": ("La lección preparada «Una edición de código: la búsqueda en el prompt copia tramos "
                         "largos» recorre, ronda a ronda, una ejecución grabada de este prompt."),

    "lab.intro": ("**Una posición, muchas muestras.** p y q salen de una pasada de cada modelo sobre el prefijo; "
                  "después se extraen N primeros tokens con la regla real (K = 1) o con un error conocido del mundo "
                  "real. El histograma de una regla sin pérdidas coincide con p salvo ruido de muestreo; el de una "
                  "regla rota se aleja."),
    "lab.models": "Modelos",
    "lab.tiny": "Modelos diminutos de demostración (instantáneo, sin descarga)",
    "lab.pair": "El par de modelos elegido a la izquierda",
    "lab.variant": "Regla",
    "lab.v_real": "la regla real (specviz.engine.rule.verify)",
    "lab.v_always_accept": "error: aceptar siempre",
    "lab.v_correction_from_p": "error: corrección extraída de p, no del residuo",
    "lab.v_untempered_q": ("error: q de los logits sin temperatura, el borrador muestrea con temperatura "
                           "(tipo transformers #47932)"),
    "lab.v_greedy_softmax_q": "error: borradores voraces con una q softmax (#32867)",
    "lab.prompt": "Prefijo",
    "lab.default_prompt": "El gato se sentó en la",
    "lab.temperature": "Temperatura",
    "lab.n": "Muestras N",
    "lab.run": "Extraer muestras",
    "lab.stop": "Detener",
    "lab.preparing": "Calculando p y q (una pasada de cada modelo)…",
    "lab.progress": "{n} de {total:muestra|muestras}…",
    "lab.done": "{n} de {total:muestra|muestras}: hecho.",
    "lab.stopped": "Detenido tras {n} de {total:muestra|muestras}.",
    "lab.stopped_none": "Detenido antes de extraer ninguna muestra.",
    "lab.stats": ("variación total {tv} · valor p de chi-cuadrado {pvalue} · el ruido de muestreo solo da "
                  "VT ≈ {noise}"),
    "lab.consistent": "compatible con p: el histograma es la distribución del objetivo",
    "lab.biased": "sesgado: el histograma no es p (valor p por debajo de 0,001)",
    "lab.why_real": ("Los borradores aceptados aportan min(p, q); los rechazos añaden max(0, p − q) a través del "
                     "residuo; la suma es p."),
    "lab.why_broken": "Esta variante rompe min(p, q) + max(0, p − q) = p, así que la salida se aleja de p.",
    "lab.t1_note": ("Con T = 1 la q con y sin temperatura es la misma: este error solo se ve con otras "
                    "temperaturas."),
    "lab.bad_choice": "Elección de modelo o de regla desconocida.",
    "lab.failed": "El laboratorio se detuvo con un error: {error}",
    "lab.empty": "Pulsa Extraer muestras",
    "lab.title": "Primer token, {n:muestra|muestras}: {variant}",
    "lab.series_samples": "tokens emitidos ({n:muestra|muestras})",
    "lab.series_p": "p del objetivo",
    "lab.y": "proporción",
    "lab.cmp_title": "¿Por qué no comparar los tokens sin más?",
    "lab.cmp_intro": ("Se comprueban {n:borrador|borradores} de q, los mismos, de dos maneras frente a la p de esta "
                      "posición: con la regla y por coincidencia exacta (el objetivo extrae su propio token de p y "
                      "solo conserva el borrador si los dos son iguales)."),
    "lab.cmp_rule": ("La regla (aceptar x cuando u < min(1, p(x)/q(x))): medido {measured} ± {se}; "
                     "fórmula Σ min(p, q) = {formula}"),
    "lab.cmp_exact": ("Coincidencia exacta (aceptar cuando la muestra del objetivo es x): medido {measured} ± {se}; "
                      "fórmula Σ p·q = {formula}"),
    "lab.cmp_why": ("La coincidencia exacta conserva un borrador solo cuando la extracción propia e independiente "
                    "del objetivo da el mismo token (probabilidad Σ p·q); la regla conserva todo el solapamiento "
                    "min(p, q). Aquí eso es {exact} frente a {rule}: la coincidencia exacta tiraría {lost} de los "
                    "borradores que la regla conserva. Σ p·q nunca supera Σ min(p, q) y queda muy por debajo cuando "
                    "p y q se reparten entre muchos tokens; la salida de la regla sigue siendo exactamente p."),

    "whatif.intro": ("**¿Y si…?** Con aceptaciones independientes de probabilidad α, una ronda emite de media "
                     "(1 − α^(K+1)) / (1 − α) tokens y cuesta K pasadas del borrador (c cada una, en pasadas del "
                     "objetivo) más una pasada de verificación."),
    "whatif.alpha": "α: probabilidad de aceptación por token del borrador",
    "whatif.k": "K: tokens del borrador por ronda",
    "whatif.c": "c: una pasada del borrador / una pasada del objetivo",
    "whatif.alpha_name": "α",
    "whatif.k_name": "K",
    "whatif.c_name": "c",
    "whatif.preset": "Ejemplo resuelto: objetivo de 70B, borrador de 8B, K = 5, α = 0,78",
    "whatif.tokens": "tokens esperados por ronda",
    "whatif.speedup": "aceleración esperada",
    "whatif.best": "mejor K = {k}",
    "whatif.measured": "la ejecución mostrada (τ medido)",
    "whatif.k_axis": "K (tokens del borrador por ronda)",
    "whatif.now": ("α = {alpha}, K = {k}, c = {c}: {tokens} tokens por ronda, aceleración {speedup}× "
                   "(coste de verificación 1); mejor K = {best}."),
    "whatif.measured_line": "Ejecución mostrada: α̂ = {alpha}, K = {k}, τ = {tau} tokens por ronda, c = {c} (cronometrado).",
    "whatif.measured_estimated": ("Ejecución mostrada: α̂ = {alpha}, K = {k}, τ = {tau} tokens por ronda, c ≈ {c} "
                                  "(estimado con los propios tiempos de borrador y verificación de la ejecución)."),
    "whatif.no_run": "No hay ejecución ni lección abierta: solo se muestra la teoría.",
    "whatif.worked": ("Ejemplo resuelto: α = {alpha}, K = {k}, c ≈ 8/70 = {c} da {tokens} tokens por ronda y una "
                      "aceleración de {speedup}× según esta fórmula. Mediciones publicadas: Chen et al. 2023 "
                      "(DeepMind, arXiv 2302.01318) informan de 2–2.5× con Chinchilla 70B en un montaje "
                      "distribuido, y Leviathan et al. 2023 (ICML, arXiv 2211.17192) de 2–3× en T5-XXL. "
                      "Esta fórmula llega aquí a {claimed}× solo con c ≈ {c_claim}."),
    "why.intro": ("**Por qué es rápido, medido.** La decodificación especulativa supone que una pasada del "
                  "objetivo sobre K+1 posiciones cuesta casi lo mismo que sobre una (límite de memoria). "
                  "Cronométralo en esta máquina."),
    "why.k": "K (posiciones 1…K+1)",
    "why.k_name": "K",
    "why.run": "Cronometrar las pasadas",
    "why.title": "Tiempo de una pasada del objetivo según el número de posiciones",
    "why.x": "posiciones en una pasada del objetivo",
    "why.y": "milisegundos",
    "why.target_series": "pasada del objetivo",
    "why.draft_series": "borrador, un token",
    "why.holds": ("La premisa se cumple en {device}: {n:posición cuesta|posiciones cuestan} {ratio}× una posición ({target} ms); "
                  "un token del borrador cuesta {draft} ms."),
    "why.fails": ("La premisa falla en {device}: {n:posición cuesta|posiciones cuestan} {ratio}× una posición ({target} ms), así "
                  "que verificar no sale casi gratis aquí y la aceleración se reduce; un token del borrador cuesta "
                  "{draft} ms."),
    "why.failed": "No se pudieron cronometrar las pasadas: {error}",
    # ------------------------------------------------------------ (specviz.ui: Stop, esperas, entradas rechazadas)
    "field.temperature": "Temperatura",
    "field.top_p": "Top-p",
    "field.draft_id": "Modelo borrador",
    "field.target_id": "Modelo objetivo",
    "input.temperature": "Temperatura: debe estar entre 0 y {hi} (0 = voraz).",
    "input.top_p": "Top-p debe ser mayor que 0 y como mucho 1 (1 = desactivado).",
    "input.hub_url": "{name}: indica un id del Hub como Qwen/Qwen2.5-0.5B-Instruct, no una dirección web",
    "input.hub_id": ("{name}: «{value}» es un id de modelo no válido; un id del Hub tiene la forma propietario/nombre, "
                     "p. ej. Qwen/Qwen2.5-0.5B-Instruct (letras, dígitos, - _ . y como mucho {limit} caracteres por parte)"),
    "input.trace_ext": "«{name}» no es una traza: elige un archivo .json guardado por specviz",
    "status.loading_step": "Cargando modelos: {step} ({percent}) · {seconds} s",
    "status.stopping_load": "Deteniendo. Los modelos terminan de cargarse en segundo plano y se guardan para la próxima vez…",
    "status.prefill": "Leyendo la instrucción ({n:token|tokens})… {seconds} s",
    "status.prefill_eta": "Leyendo la instrucción ({n:token|tokens})… {seconds} s de unos {total} s",
    "status.stopping": "Deteniendo tras la ronda en curso…",
    "status.queued": "{place} en la cola. La tuya empieza cuando terminen las de delante; Detener la cancela.",
    "replay.stopped": "Reproducción detenida tras {n} de {total:ronda|rondas}.",
    "sweep.stopping": "Deteniendo el barrido tras el paso en curso…",
    "sweep.stopped": ("Barrido detenido. Un barrido compara cada K en las mismas condiciones, así que uno parcial no "
                      "dibuja gráfico."),
    "sweep.progress": "Paso {i} de {n} del barrido: {what}… {seconds} s",
    "sweep.step_costs": "cronometrando una pasada de cada modelo",
    "sweep.step_target": "el objetivo solo",
    "sweep.step_k": "decodificación especulativa con K = {k}",
    "sweep.step_done": "terminando",
    "sweep.none_faster": ("Ninguno más rápido que el objetivo solo: el más rápido, K = {k}, hizo {tps} tokens/s frente "
                          "a {base} tokens/s del objetivo. {n:token|tokens} por ejecución, EOS ignorado."),
    "chart.none_faster": "ninguno más rápido que el objetivo solo",
    "ui.prompt_info": "Hasta {limit} caracteres; una instrucción más larga se rechaza, nunca se recorta.",
    "ui.range": "de {lo} a {hi}",
    "ui.top_p_info": "mayor que 0, como mucho 1",
    "ui.output": "Salida (el texto decodificado, sin tokens especiales)",
    "ui.output_placeholder": "La respuesta aparece aquí como texto plano, con un botón para copiarla.",
    "tracefile.not_json": "el archivo no es JSON válido: falla en la línea {line}, columna {column}",
    "tracefile.too_deep": "el JSON está anidado a más de {limit} niveles; una traza nunca lo está",
    "tracefile.not_trace": "no es una traza de specviz (falta \"format\": \"{format}\")",
    "tracefile.version": "versión de traza no admitida {version} (este specviz lee la {supported})",
    "tracefile.rounds": "\"rounds\" debe ser una lista de como mucho {limit} rondas",
    "tracefile.object": "{where} debe ser un objeto, no {got}",
    "tracefile.list": "{where} debe ser una lista, no {got}",
    "tracefile.unknown": "{where}: campo(s) desconocido(s) {names}",
    "tracefile.missing": "{where}: falta",
    "tracefile.null": "{where} no puede ser null",
    "tracefile.type": "{where} debe ser {expected}, no {got}",
    "tracefile.expect_int": "un número entero",
    "tracefile.expect_float": "un número (no se admiten NaN ni infinito)",
    "tracefile.expect_str": "texto",
    "tracefile.expect_bool": "true o false",
    "tracefile.expect_dict": "un objeto",
    "tracefile.expect_ints": "una lista de números enteros",
    "tracefile.range": "{where} debe estar entre {lo} y {hi}, no {value}",
    "tracefile.probability": "{where} es una probabilidad y debe estar entre 0 y 1, no {value}",
    "tracefile.index": "{where}.index debe ser {expected} (las rondas se numeran desde 0, en orden), no {value}",
    "tracefile.too_many_drafts": "{where} propuso {n:token|tokens}, más que K = {k}",
    "tracefile.accepted_prefix": "{where}: los borradores aceptados deben ir primero, antes de cualquiera no aceptado",
    "tracefile.rejected_at": "{where}.rejected_at es {value}, pero la ronda solo propuso {n:token|tokens}",
    "tracefile.rejected_not_first": ("{where}.rejected_at debe ser el primer borrador no aceptado "
                                     "(posición {expected}, contando desde 0), no {value}"),
    "tracefile.no_rejection": "{where}: {n:borrador|borradores} pero solo los {m} primeros aceptados, y sin rejected_at",
    "tracefile.verdict": "{where}: el veredicto contradice los números (u = {u}, a = {a}; se acepta si y solo si u < a)",
    "tracefile.correction": "{where} tiene una corrección sin borrador rechazado (o además un bonus)",
    "tracefile.bonus": "{where} tiene un bonus aunque se rechazó un borrador",
    "tracefile.emitted": ("{where}.emitted debe ser los borradores aceptados seguidos de la corrección o el bonus, "
                          "{expected}, no {value}"),
    "tracefile.budget": "las rondas emiten {n:token|tokens}, más que max_new_tokens = {limit}",

    # ------------------------------------------------------------ borradores, pasadas compiladas, si compensa
    "ui.drafter": "Borrador: quién propone los K tokens",
    "ui.drafter_info": ("La búsqueda en el prompt (n-grama) copia lo que siguió a los mismos tokens antes en el "
                        "prompt o en la salida, sin modelo borrador; el híbrido la usa cuando los 3 o más últimos "
                        "tokens se repiten y, si no, el modelo borrador."),
    "drafter.model": "modelo borrador",
    "drafter.ngram": "búsqueda en el prompt (n-grama)",
    "drafter.hybrid": "híbrido (búsqueda en el prompt o, si no, el modelo borrador)",
    "drafter.trimmed": "modelo borrador con vocabulario recortado",
    "drafter.hybrid_trimmed": "híbrido con el borrador recortado (búsqueda en el prompt o, si no, el borrador recortado)",
    "drafter.other": "{name}",
    "hover.source_model": "propuesto por el modelo borrador",
    "hover.source_ngram": ("propuesto por la búsqueda en el prompt (n-grama): copiado de lo que siguió a los mismos "
                           "tokens antes, no por el modelo borrador (q es one-hot)"),
    "hover.source_other": "propuesto por: {name}",
    "legend.ngram": "n: propuesto por la búsqueda en el prompt (n-grama), no por el modelo borrador",
    "card.drafter": "borrador: {name}",
    "card.drafter_round": "borrador: {name} · en esta ronda: {source}",
    "ui.advanced": "Avanzado",
    "ui.lookup_k": "K de búsqueda (los borradores híbridos)",
    "ui.lookup_k_info": ("Los tokens que propone como máximo una ronda de búsqueda en el prompt, de 0 a {hi}; 0 = K. "
                         "Un token buscado no cuesta un paso del borrador, solo una fila de la verificación."),
    "ui.compile": "Pasadas compiladas (torch.compile con grafos CUDA)",
    "ui.compile_info": ("automático = sí con una GPU CUDA (grafos CUDA sin torch.compile en ZeroGPU), no en una "
                        "CPU. La primera ejecución para cada K compila y captura las pasadas (decenas de segundos, "
                        "se ven en el estado); las siguientes las reutilizan."),
    "compile.auto": "automático",
    "compile.on": "sí",
    "compile.off": "no",
    "input.drafter": "Borrador desconocido «{value}»: elige uno de los borradores de la lista.",
    "input.compile": "Las pasadas compiladas deben ser automático, sí, no o grafos; se recibió «{value}».",
    "input.lookup_k_drafter": ("La K de búsqueda solo se aplica a los borradores híbridos: ponla a 0 para este "
                               "borrador."),
    "input.ngram_adaptive": ("K adaptativo se detiene según la confianza del modelo borrador, y la búsqueda en el "
                             "prompt (n-grama) no tiene modelo borrador: desactiva K adaptativo o elige otro "
                             "borrador."),
    "status.costs": ("Midiendo una pasada de cada modelo para c y el coste de verificar (una vez por par, "
                     "dispositivo y K)… {seconds} s"),
    "status.warmup": ("Compilando las pasadas y capturando grafos CUDA para K = {k} (una vez por proceso y "
                      "forma)… {seconds} s"),
    "tile.warmup": "compilación y captura {seconds} s (antes de la ejecución; no cuenta en tokens/s)",
    "pair.gpu_preset": "{name} (Hub, GPU)",
    "pays.cannot": ("En esta máquina la especulación no puede compensar con este par: un paso del borrador cuesta "
                    "c = {c} de un paso del objetivo y verificar K = {k:token|tokens} cuesta {verify}× un token, así que "
                    "con α = {alpha} la teoría da {theory}×."),
    "pays.measured": "Esta ejecución midió {speedup}× frente al objetivo solo.",
    "pays.did_not": ("La especulación no compensó en esta ejecución: midió {speedup}× frente al objetivo solo, "
                     "aunque con c = {c}, verificar K = {k:token|tokens} a {verify}× un token y α = {alpha} la teoría da "
                     "{theory}× (el resto es la sobrecarga del propio decodificador)."),
    "pays.weights": ("Los dos lados usaron el mismo objetivo con sus pesos guardados como {weights}, el objetivo "
                     "solo más rápido que esta app midió aquí."),
    "pays.hint_cpu": "Un par con más diferencia de tamaño sí compensa, p. ej. Qwen2.5-0.5B → Qwen2.5-7B en una GPU.",
    "pays.hint_gpu": ("Un par con más diferencia de tamaño sí compensa, p. ej. Qwen2.5-0.5B → Qwen2.5-14B con "
                      "pasadas compiladas."),
    # --- the API a program sees
    "api.about.generate": ("Ejecuta la decodificación especulativa (el borrador q propone, el objetivo p "
                           "verifica) sobre una instrucción; devuelve el texto, las métricas y la traza."),
    "api.about.replay": "Lee una traza sin ningún modelo; devuelve sus métricas y su texto.",
    "api.about.sweep": ("Mide el rendimiento frente a K: el objetivo solo una vez y luego la decodificación "
                        "especulativa con cada K de k_lo a k_hi."),
    "api.about.what_if": ("Lo que la teoría espera para una aceptación por token alpha, K tokens de borrador y una "
                          "razón de coste borrador/objetivo c."),
    "api.about.race": ("Una carrera de borradores sobre una instrucción: el objetivo solo y luego el modelo "
                       "borrador, la búsqueda en el prompt, el híbrido y un árbol."),
    "api.flag": "«{name}» admite true o false, no {value}.",
    "api.text": "«{name}» admite texto.",
    "api.arguments": ("«{endpoint}» recibe {n:valor|valores} en «data», en este orden: {names} (esta llamada dio "
                      "{got})."),
    "api.body_for": ("El cuerpo debe ser un objeto JSON cuyo «data» sea la lista de {n:valor|valores} de "
                     "«{endpoint}», en este orden: {names}."),
    "api.body": ("El cuerpo debe ser un objeto JSON cuyo «data» sea una lista con los valores del punto de acceso, "
                 "en orden (GET /gradio_api/info los enumera)."),
    "api.unknown_endpoint": "Aquí no hay ningún punto de acceso «{endpoint}»; los que hay son: {names}.",
    "api.no_trace": "Da una traza: el objeto que devolvió generate, o el texto de un archivo de traza (.json).",
    "api.not_a_trace": "no es un objeto de traza",
    # --- draft trees
    "tracefile.tree_status": "{where} debe ser \"accepted\", \"rejected\" o \"untried\", no {value}",
    "tracefile.tree_path": ("{where}: los nodos aceptados deben formar un único camino desde la raíz, cada uno hijo "
                            "del anterior, que deletree los borradores aceptados de la ronda"),
    "tree.caption": ("Árbol de borradores: {n} nodos comprobados en una sola pasada del objetivo, {accepted} "
                     "aceptados. En negrita: el camino aceptado; tachados: rechazados (cada hijo se prueba contra lo "
                     "que sus hermanos mayores rechazados dejaron de p); atenuados: nunca probados."),
    "tree.root": "el texto hasta aquí",
    "tree.numbers": "q {q} · p {p} · u {u} {rel} a {a}",
    "tree.untried": "no probado",
    "tree.tip": "q = {q}, p = {p}, a = min(1, r/q) = {a} frente al residuo r, u = {u}: {status}",
    "tree.status_accepted": "aceptado",
    "tree.status_rejected": "rechazado",
    "tree.status_untried": "nunca probado",
    "tree.correction": "corrección desde el residuo tras rechazar a todos los hijos de este nodo ({prob})",
    "tree.bonus": "bonus desde p tras el último nodo aceptado ({prob})",
    "tree.tip_untried": "q = {q}, p = {p}: nunca probado (ganó una rama anterior o su padre fue rechazado)",
    "drafter.tree": "árbol de borradores",
    # --- ZeroGPU and CUDA graphs without torch.compile
    "compile.graphs": "grafos",
    "status.graphs_fallback": ("La captura de los grafos CUDA falló ({reason}), así que esta ejecución usó "
                               "pasadas sin compilar: más lenta, y la especulación puede no compensar."),
    "zerogpu.long": ("Esta petición puede necesitar unos {seconds} s de GPU y una llamada a ZeroGPU recibe como "
                     "mucho {limit} s: puede quedar cortada. Con menos tokens, una K menor o un barrido más "
                     "estrecho cabe."),
    "zerogpu.quota_sweep": ("En ZeroGPU este barrido pide hasta {time} de GPU de tu cuota diaria ({anon} sin "
                            "cuenta, {free} con una cuenta gratuita): necesitas que te quede eso para que empiece. "
                            "Con menos valores de K o menos tokens pide menos; las repeticiones no gastan nada."),
    "zerogpu.quota_race": ("En ZeroGPU esta carrera pide hasta {time} de GPU de tu cuota diaria ({anon} sin "
                           "cuenta, {free} con una cuenta gratuita): necesitas que te quede eso para que empiece. "
                           "Con menos tokens o una K menor pide menos; las repeticiones no gastan nada."),
    "zerogpu.minutes": "{m} min {s} s",
    "zerogpu.whole_minutes": "{m} min",
    "zerogpu.seconds": "{s} s",
    "memory.refused": ("{name} necesita unos {need} GB ({weights} GB de pesos en {dtype} y {cache} GB de caché "
                       "KV) y {device} tiene {free} GB libres: elige un par más pequeño."),

    # --- errors in the user's language
    "error.unexpected": "Algo falló en el servidor; los detalles están en su registro.",
    "error.model_load": "No se pudieron cargar los modelos; los detalles están en el registro del servidor.",
    "error.file_unreadable": "no se pudo leer el archivo",
    "vocab.not_found": "no se encontró la tabla de vocabulario {path}",
    "vocab.unreadable": "no se pudo leer la tabla de vocabulario {path} ({reason})",
    "vocab.not_table": "{path} no es una tabla de vocabulario ({format})",
    "vocab.bad_ids": ("la tabla de vocabulario {path} está dañada: sus ids deben ser distintos y menores que el "
                      "vocabulario de su modelo"),
    "vocab.model_size": ("la tabla de vocabulario {name} es para un vocabulario de {table_vocab:token|tokens} y este par "
                         "tiene {vocab}: los borradores recortados necesitan una tabla hecha para este par "
                         "(scripts/make_vocab.py); otro borrador funciona sin ella"),
    "vocab.other_tokenizer": ("la tabla de vocabulario {name} se hizo para otro tokenizador ({table_size:token|tokens}, "
                              "huella {table_fp}; el de este par tiene {size:token|tokens}, huella {fp}): los borradores "
                              "recortados necesitan una tabla hecha para este par (scripts/make_vocab.py); otro "
                              "borrador funciona sin ella"),
    "tracefile.not_text": "el archivo no es texto: una traza es JSON escrito en UTF-8",
    "tracefile.empty": "el archivo está vacío",
    "tracefile.truncated": "el archivo termina antes que su JSON: probablemente está cortado",
    "load.role.draft": "borrador",
    "load.role.target": "objetivo",
    "load.ready": "modelos listos",
    "load.checking_ids": "comprobando los ids de los modelos",
    "load.tokenizer": "cargando el tokenizador",
    "load.tokenizers": "cargando los tokenizadores",
    "load.draft_named": "cargando el modelo borrador {name}",
    "load.target_named": "cargando el modelo objetivo {name}",
    "load.timing_kernels": "cronometrando los núcleos lineales",
    "load.preparing_kernels": "preparando los núcleos {path}",
    "load.storing_draft": "guardando los pesos del borrador como {weights}",
    "load.timing_weights": "cronometrando los formatos de pesos del objetivo",
    "load.timing_read_ahead": "cronometrando los productos del objetivo con y sin lectura anticipada",
    "load.storing_target": "guardando los pesos del objetivo como {weights}",
    "load.building_kernels": "compilando los núcleos de 4 bits de specviz para CPU (una vez; menos de un minuto)",
    "load.waiting_kernels": "esperando a que otro proceso termine de compilar los núcleos ({seconds} s)",
    "load.kernels_unavailable": ("los núcleos de 4 bits de specviz no están disponibles aquí ({reason}); se usan los "
                                 "de PyTorch"),
    "weights.q4a8": "4 bits con activaciones int8 (q4a8)",
    "load.locating": "buscando las partes empaquetadas de {name}",
    "load.assembling_parts": "ensamblando y verificando {name} ({n:parte|partes})",
    "load.assembling": "ensamblando y verificando {name}",
    "load.gpu_memory": "el modelo {role} {ref} no cabe en la memoria de la GPU",
    "load.cannot_load": "no se puede cargar el modelo {role} {ref} (el registro del servidor dice por qué)",
    "load.cannot_load_tokenizer": ("no se puede cargar el tokenizador del modelo {role} {ref} (el registro del "
                                   "servidor dice por qué)"),
    "load.vocab": ("el borrador {draft} y el objetivo {target} no comparten vocabulario ({draft_n} frente a "
                   "{target_n:token|tokens}, {diff} distintos); elige modelos de la misma familia"),
    "load.placing": "colocando los pesos de {name} para los núcleos ({done} de {total} capas)",
    "load.reading_metadata": "leyendo la configuración y el tokenizador de {name} (una sola vez)",
    "load.vocab_first": ("el borrador {draft} y el objetivo {target} no comparten vocabulario (primera diferencia en "
                         "{first}); elige modelos de la misma familia"),
    "gguf.both": "indica el borrador y el objetivo como archivos GGUF, o ninguno de los dos",
    "gguf.missing": "el archivo del modelo {role} {path} no existe",
    "gguf.unreadable": "el modelo {role} {name} no es un archivo GGUF completo (cortado o no es GGUF)",
    "gguf.architecture": ("el modelo {role} {name} es un modelo {arch}; specviz ejecuta archivos GGUF de estas "
                          "arquitecturas: {supported}"),
    "gguf.type": ("el modelo {role} {name} guarda {tensor} como {type}; specviz lee estos tipos GGUF: {supported}"),
    "gguf.metadata": "no se puede leer la configuración o el tokenizador del modelo {role} {name}: {reason}",
    "gguf.tensor_missing": "el archivo GGUF {name} no tiene tensor para {tensor}",
    "gguf.outside": "el modelo {role} {name} no es uno de los archivos GGUF que ofrece este servidor",
    "load.empty": "el modelo {role} está vacío; indica un id del Hub como Qwen/Qwen2.5-0.5B-Instruct",
    "load.no_folders": "modelo {role} {spec}: aquí no se permiten carpetas locales; usa un id del Hub",
    "load.offline": ("el modelo {role} {repo} no está en la caché local de Hugging Face y HF_HUB_OFFLINE está "
                     "activado"),
    "load.gated": ("el modelo {role} {repo} tiene acceso restringido: acepta su licencia en huggingface.co y define "
                   "HF_TOKEN"),
    "load.not_found": ("el modelo {role} {repo} no se encontró en el Hub de Hugging Face (revisa la ortografía; los "
                       "repositorios privados necesitan HF_TOKEN)"),
    "load.http": "el Hub de Hugging Face respondió HTTP {status} para el modelo {role} {repo}",
    "load.unreachable": ("no se puede contactar con el Hub de Hugging Face ({endpoint}) para obtener el modelo "
                         "{role} {repo}, y no está en la caché local"),
    "status.queued_eta": ("{place} en la cola, unos {seconds} s. La tuya empieza cuando terminen las de delante; "
                          "Detener la cancela."),
    "ordinal.one": "{n}.º",
    "ordinal.two": "{n}.º",
    "ordinal.few": "{n}.º",
    "ordinal.other": "{n}.º",
    "input.pair": "Par de modelos desconocido «{value}»: elige uno de la lista.",

    # --- classroom: deep links, "why it is fast" with its spread, Gradio's own words, presenter mode
    "cls.step_name": "Paso",
    "cls.correction_chance": ("Antes de extraer u, una prueba en esta posición falla con probabilidad "
                              "1 − Σ min(p, q) ≈ {reject}, sobre todos los tokens que el borrador podía proponer; "
                              "la prueba de este borrador fallaba con probabilidad 1 − a = {miss}."),
    "why.stop": "Detener la medición",
    "why.noisy": ("Demasiado ruido para saberlo en {device}: {n:posición|posiciones} cuestan de {lo}× a {hi}× una posición "
                  "en {reps:repetición|repeticiones}. Una dispersión que llega a ambos lados de {bound}×, o por debajo de "
                  "{floor}× (más posiciones no pueden costar menos que una), es ruido del reloj, no del modelo: "
                  "repítelo con la máquina desocupada."),
    "why.spread": "Mediana de {reps:repetición|repeticiones}; de {lo}× a {hi}×.",
    "why.progress": ("Midiendo la repetición {done} de {total}: por ahora {n:posición|posiciones} cuestan {ratio}× una "
                     "posición (de {lo}× a {hi}×)…"),
    "why.stopped": "Detenido tras {done} de {total:repetición|repeticiones}.",
    "why.budget": "Terminado tras {done} de {total:repetición|repeticiones}: se alcanzó el límite de tiempo.",
    "gradio.copy": "Copiar",
    "gradio.more_tabs": "Más pestañas",
    "gradio.footer_nav": "Navegación del pie de página de Gradio",
    "gradio.upload_drop": "Haz clic para subir o suelta aquí los archivos",
    "gradio.file_upload": "Subida de archivos",
    "gradio.reset_default": "Volver al valor predeterminado",
    "gradio.settings": "Configuración",
    # Los paneles de ajustes y «Usar vía API» de Gradio (specviz.ui.locale_panels).
    "gradio.panel.theme_light": "☀︎ Claro",
    "gradio.panel.theme_dark": "⏾ Oscuro",
    "gradio.panel.theme_system": "🖥︎ Sistema",
    "gradio.panel.language": "Idioma",
    "gradio.panel.pwa_off": "La aplicación web progresiva no está activada en esta aplicación. Para activarla, inicia la aplicación de Gradio con",
    "gradio.panel.screen_studio": "Grabación de pantalla",
    "gradio.panel.screen_studio_about": "La grabación de pantalla graba tu pantalla y genera un vídeo de la aplicación, con acercamientos y alejamientos automáticos y sin los tiempos de espera de cada predicción.",
    "gradio.panel.start_by": "Para empezar a grabar, pulsa el botón",
    "gradio.panel.start_recording": "Empezar a grabar",
    "gradio.panel.start_then": "de abajo y comparte la pestaña del navegador de esta demo de Gradio. Usa la aplicación como siempre para generar una predicción.",
    "gradio.panel.stop_by": "Para dejar de grabar, pulsa el botón",
    "gradio.panel.stop_then": "del pie de la demo.",
    "gradio.panel.auto_zoom": "Incluir acercamientos y alejamientos automáticos",
    "gradio.panel.auto_trim": "Incluir el recorte automático del vídeo",
    "gradio.panel.history_about": "Elige dónde se guardan las ejecuciones nuevas y vuelve a ver resultados anteriores.",
    "gradio.panel.view_history": "Ver el historial de ejecuciones",
    "gradio.panel.history_storage": "Dónde se guarda el historial",
    "gradio.panel.this_browser": "Este navegador",
    "gradio.panel.private_device": "Solo en este dispositivo",
    "gradio.panel.documentation": "documentación",
    "gradio.panel.api_documentation": "Documentación de la API",
    "gradio.panel.api_recorder": "Grabadora de llamadas a la API",
    "gradio.panel.api_endpoint": "punto de acceso de la API",
    "gradio.panel.api_endpoints": "puntos de acceso de la API",
    "gradio.panel.choose_way": "Elige una de estas formas de usar la API.",
    "gradio.panel.copy_page": "Copiar la página",
    "gradio.panel.install_the": "1. Instala el cliente",
    "gradio.panel.client_open": "(",
    "gradio.panel.docs": "documentación",
    "gradio.panel.if_not_installed": ") si aún no lo tienes instalado.",
    "gradio.panel.latest_gradio": "1. Asegúrate de usar la última versión de Gradio:",
    "gradio.panel.skill_install": "2. Instala el uso de este Space como una skill de tu agente de programación ejecutando esto en tu terminal:",
    "gradio.panel.instead_of": "En lugar de",
    "gradio.panel.you_can_use": ", puedes usar",
    "gradio.panel.or_comma": ", o",
    "gradio.panel.combine_flags": ". Combina opciones para instalarla en varios agentes. Usa",
    "gradio.panel.user_level": "para instalarla para tu usuario en lugar de para el proyecto.",
    "gradio.panel.skill_added": "3. Esto añade a tu agente de programación una skill que describe cómo usar este Space con Python, JavaScript y cURL. La skill se verá así:",
    "gradio.panel.mcp_server": "Esta aplicación de Gradio también puede servir como servidor MCP, con una herramienta MCP por cada punto de acceso de la API. Para activarlo, inicia esta aplicación de Gradio con",
    "gradio.panel.or_set_the": "o pon la variable de entorno",
    "gradio.panel.env_variable_to": "a",
    "gradio.panel.find_endpoint": "2. Busca abajo el punto de acceso de la API de la función que quieras. Copia el fragmento de código y cambia los valores de ejemplo por tus propios datos.",
    "gradio.panel.or_use_the": "O usa la",
    "gradio.panel.auto_requests": "para generar tus peticiones a la API automáticamente.",
    "gradio.panel.api_name": "Nombre en la API:",
    "gradio.panel.required": "Obligatorio",
    "gradio.panel.default": "Por defecto:",
    "gradio.panel.returns": "Devuelve",
    "gradio.panel.no_routes": "No hay rutas de API para",
    "gradio.panel.run_history": "Historial de ejecuciones ({n})",
    "gradio.panel.accepts": "Acepta {n} parámetro",
    "gradio.panel.accepts_many": "Acepta {n} parámetros",
    "gradio.panel.elements": "{n} elemento",
    "gradio.panel.elements_many": "{n} elementos",
    "gradio.panel.input_value": "El valor de entrada que recibe el componente Api n.º {nth}.",
    "gradio.panel.output_value": "El valor de salida que aparece en el componente Api n.º {nth}.",
    "gradio.panel.usage": "{n:petición|peticiones} ({pct} % con éxito, p50: {time})",
    "plotly.autoscale": "Escala automática",
    "plotly.box_select": "Seleccionar con un rectángulo",
    "plotly.lasso_select": "Seleccionar con lazo",
    "plotly.pan": "Desplazar",
    "plotly.reset_axes": "Restablecer los ejes",
    "plotly.zoom": "Ampliar una zona",
    "plotly.zoom_in": "Acercar",
    "plotly.zoom_out": "Alejar",
    "plotly.download": "Descargar el gráfico como PNG",
    "plotly.spikes": "Mostrar u ocultar las líneas guía",
    "plotly.download_plot": "Descargar el gráfico",
    "plotly.taking_snapshot": "Haciendo la captura: puede tardar unos segundos",
    "plotly.snapshot_ok": "Captura hecha",
    "plotly.snapshot_failed": "No se pudo descargar la captura.",
    "plotly.double_click_zoom": "Doble clic para volver a alejar",
    "plotly.double_click_legend": "Doble clic en la leyenda para aislar una serie",
    "plotly.closest": "Mostrar el dato más cercano al pasar el ratón",
    "plotly.compare": "Comparar los datos al pasar el ratón",
    # the Spanish page: words Gradio and Plotly write in English as the start of a longer attribute
    # ("number input for <label>", "Produced with Plotly.js (v3.3.1)"), and one more exact one (the footer's
    # recording button); locale.py replaces the start and keeps the rest.
    "gradio.number_input_for": "campo numérico de",
    "gradio.range_slider_for": "control deslizante de",
    "gradio.stop_recording": "Detener la grabación",
    # Spaces: un ajuste del operador, dicho al arrancar
    "zerogpu.bad_size": "{name} vale «{value}»; los tamaños de ZeroGPU son {choices}.",
    "plotly.produced_with": "Hecho con Plotly.js",

    # --- a page that never freezes, Stop, the first answer
    "status.costs_after": ("La respuesta está completa. Ahora se mide una pasada de cada modelo para la frase "
                           "bajo los indicadores (una vez por par, dispositivo y K; Detener la omite)… {seconds} s"),
    "live.earlier": ("Rondas anteriores no mostradas aquí: {n} (el cuadro de salida y la traza descargada las "
                     "tienen todas)."),
    "replay.reading": "Leyendo el archivo de traza… {seconds} s",
    "replay.stopping": "Deteniendo la repetición…",
    "status.loading_left": ("Cargando modelos: {step} ({percent}) · {seconds} s, quedan unos {left} s a este "
                            "ritmo"),

    # --- draft trees in the app: the Generate form and the round log
    "ui.drafter_tree_info": ("Árbol de borradores: un árbol dinámico de K nodos por pasada del objetivo (la regla "
                             "de EAGLE-2), verificado en una sola pasada; K es entonces el número de nodos (como "
                             "mucho {limit}). Con muestreo, un árbol fijo de K nodos."),
    "input.tree_adaptive": ("K adaptativo no se aplica al árbol de borradores: ya coloca sus K nodos donde el "
                            "borrador está más seguro. Desactiva K adaptativo o elige otro borrador."),
    "input.tree_nodes": "Un árbol de borradores tiene como mucho {limit} nodos por ronda: pon K en {limit} o menos.",
    "input.tree_compile": ("El árbol de borradores funciona sin pasadas compiladas (su máscara de atención cambia "
                           "en cada ronda): en Pasadas compiladas, elige «automático» o «no»."),
    # --- classroom: a draft tree step by step
    "ctree.kind_tree": "el árbol del borrador",
    "ctree.kind_residual": "lo que queda tras un rechazo",
    "ctree.root": "el texto hasta aquí",
    "ctree.label": "El árbol del borrador de esta ronda, con el recorrido hasta ahora",
    "ctree.tree_text": ("El **borrador** hizo crecer un árbol de {n:nodo|nodos}, de hasta {depth} de profundidad: "
                        "donde dudaba, guardó un segundo candidato para la misma posición. El **objetivo** leyó el "
                        "árbol entero en **una** pasada, cada nodo viendo solo su propia rama, así que ya conoce p "
                        "tras cada nodo. El recorrido empieza en la raíz y prueba los candidatos en orden."),
    "ctree.node_text": ("Profundidad {depth}, candidato {rank} de {n}: {token}. Se prueba contra {against}: se "
                        "queda cuando un **u** uniforme cae por debajo de **a = min(1, r/q)**."),
    "ctree.against_p": "r = p, la distribución del objetivo aquí (es el primer candidato)",
    "ctree.against_r": ("r, lo que queda de p tras {n:candidato rechazado|candidatos rechazados} antes que él "
                        "(el residuo)"),
    "ctree.formula": "a = min(1, r/q) = min(1, {r}/{q}) = {a}; u = {u} {rel} {a} → {verdict}",
    "ctree.formula_hidden": "a = min(1, r/q) = min(1, {r}/{q}) = {a}; u = ? → ¿aceptado o rechazado?",
    "ctree.then_down": "Aceptado: el recorrido baja a sus hijos ({n:nodo|nodos}).",
    "ctree.then_leaf": "Aceptado, y no tiene hijos: ahora viene el token extra.",
    "ctree.then_accepted": "Aceptado.",
    "ctree.then_sibling": "Rechazado: el siguiente candidato, {token}, se prueba contra lo que queda.",
    "ctree.then_correction": "Rechazado, y aquí no queda ningún candidato: la corrección se extrae del residuo.",
    "ctree.greedy_note": ("Ejecución voraz: r es one-hot en el token preferido del objetivo, así que a vale 1 "
                          "cuando el candidato es ese token y 0 si no."),
    "ctree.residual_text": ("{token} fue rechazado. El siguiente candidato, {next}, no se prueba otra vez contra r: "
                            "en esa prueba cada token que el borrador podía proponer aquí ya tuvo su ocasión de ser "
                            "aceptado, con probabilidad min(r, q), así que esa parte de r está usada. {next} se prueba "
                            "contra lo que queda, normalizado: **r′ = norm(max(0, r − q))**, el residuo. Eso mantiene "
                            "la salida distribuida exactamente como la p del objetivo."),
    "ctree.changed": "Las probabilidades que cambió este rechazo (r antes → r′ después):",
    "ctree.change": "{token}: {before} → {after}",
    "ctree.not_recorded": "fuera de los tokens principales registrados",
    "ctree.reject_chance": ("Antes de extraer un candidato, una prueba aquí falla con probabilidad Σ max(0, r − q) = "
                            "{reject}, sobre todos los tokens que el borrador podía proponer; la prueba de este "
                            "candidato fallaba con probabilidad 1 − a = {miss}."),
    "ctree.residual_greedy": "Voraz: quitar un candidato equivocado deja el token preferido del objetivo donde estaba.",
    "ctree.see_mass": "La figura de abajo muestra r y q antes del rechazo y el residuo r′ después.",
    "ctree.correction_text": ("Todos los candidatos de la profundidad {depth} fueron rechazados, así que la ronda "
                              "termina con una **corrección**: {token}, extraída del último residuo (r′ = {r})."),
    "ctree.bonus_text": ("El recorrido aceptó {n:nodo|nodos} y llegó a una hoja: la pasada del objetivo ya contiene "
                         "p tras ella, así que la ronda termina con un token **extra** {token}, extraído de p "
                         "(p = {p})."),
    "ctree.sum_path": "camino aceptado de {n:token|tokens}: {tokens}; {tried} de {total:nodo|nodos} probados",
    "ctree.sum_wins": "un candidato posterior ganó {n:vez|veces}",
    "ctree.mass_title": "Ronda {round}, profundidad {depth}: lo que queda tras rechazar {token}",
    "ctree.mass_top": "r partida en min(r, q) y max(0, r − q); q marcada",
    "ctree.mass_bottom": "el residuo normalizado: r′, contra lo que se prueba el siguiente candidato",
    "ctree.mass_note": "Aquí las barras de p son r: aquello contra lo que se probó el nodo (p misma para un primer candidato).",
    "ctree.redraw": "Una ronda con árbol se muestra solo con sus u grabados: un u nuevo recorrería otra rama.",
    # --- nada se desboca en una CPU, rechazar sin recortar, las pequeñas mentiras del aula
    "input.compile_cpu": ("Esta máquina no tiene GPU CUDA, y las pasadas compiladas («sí») y los grafos CUDA "
                          "(«grafos») la necesitan: elige «automático» o «no»."),
    "input.temperature_low": "La temperatura debe ser 0 (voraz) o estar entre {lo} y {hi}.",
    "input.k_order": ("La K más pequeña ({lo}) es mayor que la K más grande ({hi}): pon la menor como la más "
                      "pequeña."),
    "status.withdrawn": "Retirada: tu petición salió de la cola antes de empezar, y no se ejecutó nada.",
    "tracefile.tree_parent": ("ronda {round}: el nodo {node} de su árbol de borradores nombra como padre al nodo "
                              "{parent}, pero un padre debe ir antes que sus hijos, así que este árbol daría la "
                              "vuelta sobre sí mismo"),
    "tracefile.tree_root": ("ronda {round}: el nodo {node} de su árbol de borradores nombra un padre que no existe "
                            "({parent}); los hijos de la raíz nombran -1"),
    "why.too_few": ("Detenido tras {done} de {total:repetición|repeticiones}: son pocas para juzgar la premisa en "
                    "{device}. Hasta ahora {n:posición|posiciones} cuestan {ratio}× una posición ({target} ms)."),
    "why.too_few_budget": ("El límite de tiempo terminó la medida tras {done} de {total:repetición|repeticiones}: son "
                           "pocas para juzgar la premisa en {device}. Hasta ahora {n:posición|posiciones} cuestan "
                           "{ratio}× una posición ({target} ms)."),
    "pays.tree_cannot": ("En esta máquina un árbol de borradores no puede compensar con este par: cada ronda ejecuta "
                         "el modelo borrador {reads} veces a c = {c} de un paso del objetivo cada una, y verificar "
                         "{k:nodo|nodos} cuesta {verify}× un token, así que cada ronda cuesta {cost} pasos del "
                         "objetivo mientras emite τ = {tau} (tokens por ronda): {theory}× como mucho."),
    "pays.tree_did_not": ("El árbol de borradores no compensó en esta ejecución: midió {speedup}× frente al objetivo "
                          "solo, aunque τ = {tau} (tokens por ronda) con el modelo borrador ejecutado {reads} veces "
                          "por ronda a c = {c} y una verificación de {k:nodo|nodos} a {verify}× un token permitirían "
                          "{theory}× (el resto es el coste propio del decodificador)."),
    # ---------------------------------------------------------------- a run as one HTML file (viz/export.py)
    "ui.download_html": "Descargar como HTML (repetición sin conexión)",
    "export.title": "specviz · una ejecución grabada de decodificación especulativa",
    "export.intro": ("Esta página repite una ejecución grabada ronda a ronda. No necesita servidor, ni modelo, ni red: "
                     "todo está dentro de este único archivo. Pasa el puntero, toca o enfoca un token para ver su q, p, "
                     "a = min(1, p/q), u y veredicto."),
    "export.nav": "Recorrer las rondas",
    "export.first": "|◀ Primera",
    "export.prev": "◀ Anterior",
    "export.next": "Siguiente ▶",
    "export.last": "Última ▶|",
    "export.play": "Reproducir",
    "export.pause": "Pausa",
    "export.slider": "Ronda mostrada",
    "export.round_of": "Ronda {n} de {total}",
    "export.start": "Solo el prompt, antes de la ronda 1 de {total}",
    "export.keys": "Teclas: ← y → avanzan o retroceden una ronda, Inicio y Fin saltan, la barra espaciadora reproduce y pausa.",
    "export.live": "El texto, ronda a ronda",
    "export.charts": "Aceptación y tiempos, hasta la ronda mostrada",
    "export.timing_sub": "{n:ronda|rondas}, las más recientes hasta la mostrada; la ronda mostrada va recuadrada",
    "export.timing_bar": "ronda {round}: borrador {draft} ms, verificación {verify} ms, {tokens:token emitido|tokens emitidos}",
    "export.noscript": "Sin JavaScript se muestran todas las rondas a la vez; con él, los botones las recorren.",
    "export.made": "Exportado por specviz de una traza de {rounds:ronda|rondas} ({tokens:token|tokens}).",
    "export.too_many_rounds": ("la traza tiene {n:ronda|rondas}; una página exportada admite como máximo {limit} (el archivo "
                               "sería demasiado grande para que un navegador lo abra con rapidez)"),
    "export.log_window": "Las {n} tarjetas más recientes hasta la ronda mostrada; el deslizador llega a todas las rondas.",
}
