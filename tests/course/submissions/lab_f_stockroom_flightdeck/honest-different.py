# expect: 6
# proves: correct answers written differently from the reference solutions get full marks
# %% answer call_decision
def call_decision(validation):
    blocked, approval = validation["static_request_blocked"], validation["approval_required"]
    return "blocked" if blocked is True else ("may_call" if approval is False else "ask_approval")
# %% answer approve_restock
def approve_restock(question, snapshot):
    payload = question["payload"]
    stock = {item["sku"]: item for item in snapshot["items"]}
    lines = payload.get("lines") or []
    fits = [
        line.get("sku") in stock
        and type(line.get("add_on_order")) is int and line["add_on_order"] > 0
        and stock[line["sku"]]["on_hand"] + stock[line["sku"]]["on_order"] + line["add_on_order"] <= stock[line["sku"]]["par"]
        for line in lines
    ]
    return "accept" if payload.get("ledger_version") == snapshot["ledger_version"] and fits and all(fits) else "decline"
