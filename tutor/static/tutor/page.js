// Pages other than the client (the sign-in page): text in the chosen language.
import { applyLanguage, chooseLanguage, setUpLanguageSelect } from "./i18n.js";

applyLanguage(chooseLanguage());
setUpLanguageSelect(document.getElementById("lang-select"));
