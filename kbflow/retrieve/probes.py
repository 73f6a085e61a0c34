"""Questions about everyday topics, asked of every lake to learn how well a question it cannot answer matches it.

:mod:`kbflow.retrieve.confidence` searches the lake with each of them after an
ingest: the cosine similarity of their best hits is what "no answer here"
looks like in that lake (a lake of long prose pages meets any question at a
higher cosine than a lake of short code snippets). They span cooking,
gardening, travel, sport, history, astronomy, health, law, music, household,
money, cars, pets, weather, geography, art, film, family, fitness, science,
literature, religion, politics, farming, hobbies and games, so that any one
lake answers at most a few of them; the median of their best cosines is read,
which a few answered ones do not move.

They are kbflow's own and held apart from every evaluation set's questions.
"""

from __future__ import annotations

__all__ = ["PROBES"]

PROBES: tuple[str, ...] = (
    "how do I make fresh pasta without a machine",
    "what temperature should a medium rare steak reach",
    "which vegetables grow well in a shady garden",
    "when is the best season to prune rose bushes",
    "what documents do I need to travel to Japan from Europe",
    "how many players are on a rugby union team",
    "who won the football world cup in 1998",
    "what were the main causes of the first world war",
    "why did the Roman empire split into east and west",
    "how far is Mars from the Sun",
    "what is a black hole made of",
    "what are the symptoms of iron deficiency anemia",
    "how often should adults get a tetanus booster",
    "what is the difference between a will and a living trust",
    "how do I dispute a parking ticket",
    "what chords are in a twelve bar blues",
    "who composed the four seasons violin concertos",
    "how do I wash a wool sweater without shrinking it",
    "what is a good credit score for a mortgage",
    "how do index funds differ from actively managed funds",
    "how do I jump start a car with a dead battery",
    "how do I fix a flat bicycle tire",
    "how do I stop my cat scratching the sofa",
    "what should I feed a pet rabbit",
    "why is the sky blue during the day",
    "how do hurricanes form over the ocean",
    "what is the longest river in Africa",
    "which countries border Switzerland",
    "what style of painting is Claude Monet known for",
    "who directed the film Casablanca",
    "how do I help my child learn to read",
    "what should I look for when renting an apartment",
    "how many calories does running a mile burn",
    "how do I do a proper push up",
    "what happens when you mix baking soda and vinegar",
    "how do plant cells differ from animal cells",
    "what is the speed of sound in air",
    "who wrote the novel Pride and Prejudice",
    "what are the five pillars of Islam",
    "how does a bill become a law in the United States",
    "when should wheat be harvested",
    "what bait is best for catching trout",
    "how do I cut a dovetail joint by hand",
    "how do I cast on stitches in knitting",
    "what shutter speed freezes motion in sports photography",
    "how do I beat the final boss in a video game",
    "what are the rules of chess castling",
    "what is the fastest way to learn Spanish vocabulary",
    "what does comprehensive car insurance cover",
    "when is the deadline to file a personal tax return",
    "how do I remove a red wine stain from a carpet",
    "what is the best way to store fresh herbs",
    "how do the kidneys filter blood",
    "what is the population of Canada",
    "how do I plan a wedding on a budget",
    "what is the tallest mountain in South America",
    "how do solar panels turn sunlight into electricity",
    "how do bees make honey",
    "what is the plot of Hamlet",
    "how do I tie a bowline knot",
)
